-- Album counts (custom migration; drizzle-kit does not model triggers), as SQLite's (migrations/0016_album_counts_
-- triggers.sql): albums.image_count and public_count follow album_images and their images' visibility inside the
-- statement that changes them.
CREATE FUNCTION album_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		UPDATE "albums" SET
			"image_count" = "image_count" - 1,
			"public_count" = "public_count"
				- coalesce((SELECT ("visibility" = 'public')::int FROM "images" WHERE "id" = OLD."image_id"), 0)
		WHERE "id" = OLD."album_id";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		UPDATE "albums" SET
			"image_count" = "image_count" + 1,
			"public_count" = "public_count"
				+ coalesce((SELECT ("visibility" = 'public')::int FROM "images" WHERE "id" = NEW."image_id"), 0)
		WHERE "id" = NEW."album_id";
	END IF;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "album_counts" AFTER INSERT OR DELETE OR UPDATE ON "album_images" FOR EACH ROW
	EXECUTE FUNCTION album_counts_follow();
--> statement-breakpoint
-- An image leaves its albums before its row goes, so the trigger above still reads its visibility (the foreign key's
-- cascade would remove the memberships once the image row is gone).
CREATE FUNCTION images_leave_albums() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM "album_images" WHERE "image_id" = OLD."id";
	RETURN OLD;
END $$;
--> statement-breakpoint
CREATE TRIGGER "images_leave_albums" BEFORE DELETE ON "images" FOR EACH ROW EXECUTE FUNCTION images_leave_albums();
--> statement-breakpoint
CREATE FUNCTION images_album_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE "albums" SET "public_count" = "public_count" + CASE WHEN NEW."visibility" = 'public' THEN 1 ELSE -1 END
	WHERE "id" IN (SELECT "album_id" FROM "album_images" WHERE "image_id" = NEW."id");
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "images_album_counts_au" AFTER UPDATE OF "visibility" ON "images" FOR EACH ROW
	WHEN (OLD."visibility" IS DISTINCT FROM NEW."visibility")
	EXECUTE FUNCTION images_album_counts();
--> statement-breakpoint
-- Count what already exists.
UPDATE "albums" SET
	"image_count" = (SELECT count(*) FROM "album_images" ai WHERE ai."album_id" = "albums"."id"),
	"public_count" = (SELECT count(*) FROM "album_images" ai JOIN "images" i ON i."id" = ai."image_id"
		WHERE ai."album_id" = "albums"."id" AND i."visibility" = 'public');
