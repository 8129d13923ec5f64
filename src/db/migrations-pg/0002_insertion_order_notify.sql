-- Custom migration (drizzle-kit does not model these).
--
-- Insertion order: SQLite breaks ties between rows of the same millisecond (a batch upload) by their rowid, the order
-- they were inserted in. PostgreSQL has no such column: `seq` is one, filled by the database, never written by the
-- application (src/db/order.ts picks rowid or seq).
ALTER TABLE "images" ADD COLUMN "seq" bigint GENERATED ALWAYS AS IDENTITY;
--> statement-breakpoint
ALTER TABLE "album_images" ADD COLUMN "seq" bigint GENERATED ALWAYS AS IDENTITY;
--> statement-breakpoint
-- Change notices for the caches of every instance (src/db/changes.ts): a row of a cached table that changes or goes
-- sends `<table>:<key>` on the channel imghost_changes, delivered at commit (nothing for a rolled-back change).
CREATE FUNCTION "notify_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('imghost_changes', TG_TABLE_NAME || ':' || (to_jsonb(OLD) ->> TG_ARGV[0]));
	RETURN NULL;
END;
$$;
--> statement-breakpoint
-- A view count written by a flush changes nothing a cache shows but the count: no notice (each instance's cache adds
-- the views it counted itself; the others' show once the entry is read again).
CREATE TRIGGER "images_changed" AFTER UPDATE ON "images" FOR EACH ROW
	WHEN ((to_jsonb(OLD) - 'views') IS DISTINCT FROM (to_jsonb(NEW) - 'views'))
	EXECUTE FUNCTION "notify_change"('id');
--> statement-breakpoint
CREATE TRIGGER "images_deleted" AFTER DELETE ON "images" FOR EACH ROW EXECUTE FUNCTION "notify_change"('id');
--> statement-breakpoint
CREATE TRIGGER "sessions_deleted" AFTER DELETE ON "sessions" FOR EACH ROW EXECUTE FUNCTION "notify_change"('id');
--> statement-breakpoint
CREATE TRIGGER "blocks_deleted" AFTER DELETE ON "blocks" FOR EACH ROW EXECUTE FUNCTION "notify_change"('id');
--> statement-breakpoint
CREATE TRIGGER "variants_deleted" AFTER DELETE ON "variants" FOR EACH ROW EXECUTE FUNCTION "notify_change"('key');
