-- Full-text search for GET /api/search on PostgreSQL (custom migration; drizzle-kit does not model triggers), the
-- same documents and rules as SQLite's FTS5 index (src/db/migrations/0001_search_fts.sql, 0004_guarded_search_...):
-- one document per image (its original filename) and one per public, live album without a password holding it (that
-- album's title). A query matches an image when all of its words match one document of that image, each as a prefix.
-- Triggers keep search_docs in sync with images, albums and album_images, so no application code writes it.
--
-- Words are what FTS5's unicode61 tokenizer (remove_diacritics) gives: runs of letters and digits, case folded,
-- diacritics removed. search_normalize() turns a text into such words separated by single spaces: NFC, unaccent (which
-- also folds ligatures and ß to ss), lower case, then every run of non letters/digits becomes a space. Its character
-- classes and case mapping use the ICU root collation, so they follow Unicode whatever the cluster's locale (a "C"
-- locale would take every non-ASCII letter for a separator); PostgreSQL must be built with ICU, as Debian's and the
-- official Docker images are. unaccent ships with PostgreSQL (contrib) and is a trusted extension: a database owner
-- may create it. The words are made into a tsvector without PostgreSQL's
-- text parser (which reads `cat.jpg` as a file name and `a/b` as a path), and query words into prefix terms without
-- the tsquery parser seeing user text.
DO $$
BEGIN
	IF current_setting('server_encoding') <> 'UTF8' THEN
		RAISE EXCEPTION 'search needs a UTF8 database (CREATE DATABASE ... ENCODING ''UTF8''), not %', current_setting('server_encoding');
	END IF;
END $$;
--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public;
--> statement-breakpoint
-- IMMUTABLE although unaccent() is only STABLE (its rules file could change): it lets the planner fold a query's terms
-- once; a changed rules file would need a reindex (UPDATE search_docs SET body = body).
CREATE FUNCTION search_normalize(body text) RETURNS text
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$
		SELECT btrim(regexp_replace(
			lower(public.unaccent('public.unaccent'::regdictionary, normalize(body, NFC)) COLLATE "und-x-icu"),
			'[^[:alnum:]]+', ' ', 'g'))
	$$;
--> statement-breakpoint
-- A document's words; a word longer than a tsvector lexeme may be (2047 bytes) is left out.
CREATE FUNCTION search_words(body text) RETURNS tsvector
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$
		SELECT coalesce(array_to_tsvector(array_agg(w)), ''::tsvector)
		FROM regexp_split_to_table(search_normalize(body), ' ') AS w
		WHERE w <> '' AND octet_length(w) < 2048
	$$;
--> statement-breakpoint
-- One query word as a tsquery: each of its words as a prefix, all of them (a query word that normalizes to several,
-- as FTS5 reads a quoted phrase; unordered here). The words hold only letters and digits, and are quoted besides.
-- Null (matches nothing) when the word has no letter or digit, or one too long to be in any document.
CREATE FUNCTION search_prefix_query(word text) RETURNS tsquery
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$
		SELECT CASE WHEN bool_or(octet_length(w) >= 2048) THEN NULL
			ELSE string_agg('''' || replace(replace(w, '\', '\\'), '''', '''''') || ''':*', ' & ')::tsquery END
		FROM regexp_split_to_table(search_normalize(word), ' ') AS w
		WHERE w <> ''
	$$;
--> statement-breakpoint
CREATE TABLE "search_docs" (
	"docid" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
	"image_id" text NOT NULL,
	"album_id" text,
	"body" text NOT NULL,
	"words" tsvector NOT NULL
);
--> statement-breakpoint
CREATE INDEX "search_docs_image" ON "search_docs" ("image_id", "album_id");
--> statement-breakpoint
CREATE INDEX "search_docs_album" ON "search_docs" ("album_id") WHERE "album_id" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX "search_docs_words" ON "search_docs" USING gin ("words");
--> statement-breakpoint
CREATE FUNCTION search_docs_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.words := search_words(NEW.body);
	RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER "search_docs_words" BEFORE INSERT OR UPDATE OF "body" ON "search_docs"
	FOR EACH ROW EXECUTE FUNCTION search_docs_words();
--> statement-breakpoint
-- The album documents of an image: the titles of the public, live, unguarded albums holding it.
CREATE FUNCTION search_index_image(image text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO "search_docs" ("image_id", "album_id", "body")
		SELECT image, a."id", a."title" FROM "album_images" ai JOIN "albums" a ON a."id" = ai."album_id"
		WHERE ai."image_id" = image AND a."is_public" AND a."deleted_at" IS NULL AND a."password_hash" IS NULL;
$$;
--> statement-breakpoint
CREATE FUNCTION images_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		DELETE FROM "search_docs" WHERE "image_id" = OLD."id";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO "search_docs" ("image_id", "album_id", "body") VALUES (NEW."id", NULL, NEW."filename");
	END IF;
	IF TG_OP = 'UPDATE' THEN
		PERFORM search_index_image(NEW."id");
	END IF;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "images_search_ai" AFTER INSERT ON "images" FOR EACH ROW EXECUTE FUNCTION images_search();
--> statement-breakpoint
CREATE TRIGGER "images_search_ad" AFTER DELETE ON "images" FOR EACH ROW EXECUTE FUNCTION images_search();
--> statement-breakpoint
CREATE TRIGGER "images_search_au" AFTER UPDATE OF "id", "filename" ON "images" FOR EACH ROW
	WHEN (OLD."id" IS DISTINCT FROM NEW."id" OR OLD."filename" IS DISTINCT FROM NEW."filename")
	EXECUTE FUNCTION images_search();
--> statement-breakpoint
CREATE FUNCTION album_images_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		DELETE FROM "search_docs" WHERE "image_id" = OLD."image_id" AND "album_id" = OLD."album_id";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO "search_docs" ("image_id", "album_id", "body")
			SELECT NEW."image_id", a."id", a."title" FROM "albums" a
			WHERE a."id" = NEW."album_id" AND a."is_public" AND a."deleted_at" IS NULL AND a."password_hash" IS NULL;
	END IF;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "album_images_search_ai" AFTER INSERT ON "album_images" FOR EACH ROW
	EXECUTE FUNCTION album_images_search();
--> statement-breakpoint
CREATE TRIGGER "album_images_search_ad" AFTER DELETE ON "album_images" FOR EACH ROW
	EXECUTE FUNCTION album_images_search();
--> statement-breakpoint
CREATE TRIGGER "album_images_search_au" AFTER UPDATE ON "album_images" FOR EACH ROW
	EXECUTE FUNCTION album_images_search();
--> statement-breakpoint
CREATE FUNCTION albums_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM "search_docs" WHERE "album_id" = OLD."id";
	IF TG_OP = 'UPDATE' AND NEW."is_public" AND NEW."deleted_at" IS NULL AND NEW."password_hash" IS NULL THEN
		INSERT INTO "search_docs" ("image_id", "album_id", "body")
			SELECT ai."image_id", NEW."id", NEW."title" FROM "album_images" ai WHERE ai."album_id" = NEW."id";
	END IF;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "albums_search_au" AFTER UPDATE OF "id", "title", "is_public", "deleted_at", "password_hash" ON "albums"
	FOR EACH ROW EXECUTE FUNCTION albums_search();
--> statement-breakpoint
CREATE TRIGGER "albums_search_ad" AFTER DELETE ON "albums" FOR EACH ROW EXECUTE FUNCTION albums_search();
--> statement-breakpoint
-- Index what already exists.
INSERT INTO "search_docs" ("image_id", "album_id", "body") SELECT "id", NULL, "filename" FROM "images";
--> statement-breakpoint
INSERT INTO "search_docs" ("image_id", "album_id", "body")
	SELECT ai."image_id", a."id", a."title" FROM "album_images" ai JOIN "albums" a ON a."id" = ai."album_id"
	WHERE a."is_public" AND a."deleted_at" IS NULL AND a."password_hash" IS NULL;
