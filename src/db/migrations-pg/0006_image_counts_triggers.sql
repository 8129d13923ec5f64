-- Image counts (custom migration; drizzle-kit does not model triggers), as SQLite's (migrations/0014_image_counts_
-- triggers.sql): image_counts (src/db/schema-pg.ts) follows every insert, delete and change of an images row inside the
-- statement that makes it. Each row adds to its owner's day (0: anonymous) and to everyone's (-1). One statement per
-- change, its rows in key order: two writers' counts are always locked in the same order, so they never deadlock.
CREATE FUNCTION image_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "image_counts" ("owner_id", "day", "images", "bytes", "public", "nsfw", "public_nsfw", "shown", "listed")
		SELECT o."id",
			r."created_at" / 86400000,
			sum(r.s),
			sum(r.s * r."size"),
			sum(r.s * (r."visibility" = 'public')::int),
			sum(r.s * r."nsfw"::int),
			sum(r.s * (r."visibility" = 'public' AND r."nsfw")::int),
			sum(r.s * (r."visibility" = 'public' AND r."scan_status" <> 'pending')::int),
			sum(r.s * (r."visibility" = 'public' AND NOT r."nsfw" AND r."scan_status" <> 'pending')::int)
		FROM (
			SELECT -1 AS s, OLD."user_id", OLD."created_at", OLD."size", OLD."visibility", OLD."nsfw", OLD."scan_status"
				WHERE TG_OP <> 'INSERT'
			UNION ALL
			SELECT 1, NEW."user_id", NEW."created_at", NEW."size", NEW."visibility", NEW."nsfw", NEW."scan_status"
				WHERE TG_OP <> 'DELETE'
		) AS r CROSS JOIN LATERAL (VALUES (coalesce(r."user_id", 0)), (-1)) AS o("id")
		GROUP BY 1, 2
		ORDER BY 1, 2
		ON CONFLICT ("owner_id", "day") DO UPDATE SET
			"images" = image_counts."images" + excluded."images",
			"bytes" = image_counts."bytes" + excluded."bytes",
			"public" = image_counts."public" + excluded."public",
			"nsfw" = image_counts."nsfw" + excluded."nsfw",
			"public_nsfw" = image_counts."public_nsfw" + excluded."public_nsfw",
			"shown" = image_counts."shown" + excluded."shown",
			"listed" = image_counts."listed" + excluded."listed";
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "image_counts_ai" AFTER INSERT ON "images" FOR EACH ROW EXECUTE FUNCTION image_counts_follow();
--> statement-breakpoint
CREATE TRIGGER "image_counts_ad" AFTER DELETE ON "images" FOR EACH ROW EXECUTE FUNCTION image_counts_follow();
--> statement-breakpoint
CREATE TRIGGER "image_counts_au" AFTER UPDATE OF "user_id", "created_at", "size", "visibility", "nsfw", "scan_status"
	ON "images" FOR EACH ROW
	WHEN ((OLD."user_id", OLD."created_at", OLD."size", OLD."visibility", OLD."nsfw", OLD."scan_status")
		IS DISTINCT FROM (NEW."user_id", NEW."created_at", NEW."size", NEW."visibility", NEW."nsfw", NEW."scan_status"))
	EXECUTE FUNCTION image_counts_follow();
--> statement-breakpoint
-- The order rows were inserted in (seq): a listing pinned to a moment (asOf) leaves out rows inserted after it.
CREATE INDEX "images_seq" ON "images" ("seq");
--> statement-breakpoint
-- Count what already exists.
INSERT INTO "image_counts" ("owner_id", "day", "images", "bytes", "public", "nsfw", "public_nsfw", "shown", "listed")
	SELECT o."id",
		r."created_at" / 86400000,
		sum(1),
		sum(r."size"),
		sum((r."visibility" = 'public')::int),
		sum(r."nsfw"::int),
		sum((r."visibility" = 'public' AND r."nsfw")::int),
		sum((r."visibility" = 'public' AND r."scan_status" <> 'pending')::int),
		sum((r."visibility" = 'public' AND NOT r."nsfw" AND r."scan_status" <> 'pending')::int)
	FROM "images" AS r CROSS JOIN LATERAL (VALUES (coalesce(r."user_id", 0)), (-1)) AS o("id")
	GROUP BY 1, 2;
