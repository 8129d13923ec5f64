-- Images are vacuumed once 1,000 rows plus 0.5% of the table are dead (custom migration), not PostgreSQL's 50 plus
-- 20%. An owner's totals subtract what has expired but is not swept yet through images_user_expires, and a bitmap scan
-- visits every version the index still points at: after the sweep deleted a seeded million's 5,000 expired rows of
-- one owner, `/api/v1/me` took 10.6-11.9 ms until a vacuum, 0.5 ms after. With the default a million-row table waits
-- for 200,000 dead rows; with this one for 6,000, about forty seconds after such a sweep on the bench machine.
ALTER TABLE "images" SET (autovacuum_vacuum_scale_factor = 0.005, autovacuum_vacuum_threshold = 1000);
