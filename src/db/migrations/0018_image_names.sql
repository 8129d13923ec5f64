-- The owner's name filter (custom migration; drizzle-kit does not model virtual tables or triggers): a trigram index
-- of each owned image's filename, lower-cased as SQLite's lower() does (ASCII letters), so `name MATCH "<q>"` finds
-- exactly the filenames `lower(filename) LIKE '%<q>%'` finds, for a q of 3 characters or more. The owner, visibility
-- and NSFW flag are written into the `owner` column as delimited words (char(1) user id char(1), char(2) visibility
-- char(2), char(3) 0/1 char(3)) so a count of an owner's matches, narrowed as the list is, is read from the index
-- alone (src/modules/images/names.ts). Contentless: no copy of the text; rows are the images' rowids (which
-- VACUUM and VACUUM INTO keep, as the lists' asOf already relies on). The triggers keep it within each write.
CREATE VIRTUAL TABLE `image_names` USING fts5(`owner`, `name`, content='', contentless_delete=1, tokenize='trigram case_sensitive 1');
--> statement-breakpoint
CREATE TRIGGER `image_names_ai` AFTER INSERT ON `images` WHEN new.`user_id` IS NOT NULL BEGIN
	INSERT INTO `image_names` (rowid, `owner`, `name`) VALUES (new.rowid,
		char(1) || new.`user_id` || char(1) || ' ' || char(2) || new.`visibility` || char(2) || ' ' || char(3) || new.`nsfw` || char(3),
		lower(new.`filename`));
END;
--> statement-breakpoint
CREATE TRIGGER `image_names_ad` AFTER DELETE ON `images` WHEN old.`user_id` IS NOT NULL BEGIN
	DELETE FROM `image_names` WHERE rowid = old.rowid;
END;
--> statement-breakpoint
CREATE TRIGGER `image_names_au` AFTER UPDATE OF `user_id`, `filename`, `visibility`, `nsfw` ON `images` BEGIN
	DELETE FROM `image_names` WHERE rowid = old.rowid;
	INSERT INTO `image_names` (rowid, `owner`, `name`) SELECT new.rowid,
		char(1) || new.`user_id` || char(1) || ' ' || char(2) || new.`visibility` || char(2) || ' ' || char(3) || new.`nsfw` || char(3),
		lower(new.`filename`)
		WHERE new.`user_id` IS NOT NULL;
END;
--> statement-breakpoint
INSERT INTO `image_names` (rowid, `owner`, `name`)
	SELECT rowid,
		char(1) || `user_id` || char(1) || ' ' || char(2) || `visibility` || char(2) || ' ' || char(3) || `nsfw` || char(3),
		lower(`filename`)
	FROM `images` WHERE `user_id` IS NOT NULL;
