-- The owner's name filter (custom migration; drizzle-kit does not model it): a trigram index (pg_trgm, in Debian's
-- postgresql package; a trusted extension, so a database owner may create it) over lower(filename), which the
-- filter's `lower(filename) LIKE lower('%<q>%')` uses for a q of 3 characters or more, beside the owner's index, as
-- the planner finds cheaper. Where the extension cannot be created (no privilege, not installed), the service starts
-- without it and the filter walks the owner's images, as before (a notice says so).
DO $$
BEGIN
	CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE 'pg_trgm unavailable (%): the name filter walks the owner''s images', SQLERRM;
END $$;
--> statement-breakpoint
DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
		CREATE INDEX IF NOT EXISTS "images_filename_trgm" ON "images" USING gin (lower("filename") gin_trgm_ops);
	END IF;
END $$;
