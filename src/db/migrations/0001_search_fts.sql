-- Full-text search for GET /api/search (custom migration; drizzle-kit does not model FTS5 or triggers).
--
-- One searchable document per source: an image's original filename, and one per public, live album the image is in
-- (that album's title). A query matches an image when all of its words match one document of that image.
-- search_docs is the content table with a stable INTEGER PRIMARY KEY (the implicit rowid of `images` may change on
-- VACUUM, so it cannot key the index); image_search is the FTS5 index over it (external content).
-- Triggers keep both in sync with images, albums and album_images, so no application code writes them.
CREATE TABLE `search_docs` (
	`docid` integer PRIMARY KEY,
	`image_id` text NOT NULL,
	`album_id` text,
	`body` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `search_docs_image` ON `search_docs` (`image_id`, `album_id`);
--> statement-breakpoint
CREATE INDEX `search_docs_album` ON `search_docs` (`album_id`) WHERE `album_id` IS NOT NULL;
--> statement-breakpoint
-- unicode61: tokens are runs of letters and digits (categories L*, N*, Co), everything else separates words;
-- case folded, diacritics removed; prefix indexes make `word*` queries cheap.
CREATE VIRTUAL TABLE `image_search` USING fts5(
	`body`,
	content='search_docs',
	content_rowid='docid',
	tokenize='unicode61 remove_diacritics 2',
	prefix='1 2 3'
);
--> statement-breakpoint
CREATE TRIGGER `search_docs_ai` AFTER INSERT ON `search_docs` BEGIN
	INSERT INTO `image_search`(rowid, `body`) VALUES (new.`docid`, new.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `search_docs_ad` AFTER DELETE ON `search_docs` BEGIN
	INSERT INTO `image_search`(`image_search`, rowid, `body`) VALUES ('delete', old.`docid`, old.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `search_docs_au` AFTER UPDATE ON `search_docs` BEGIN
	INSERT INTO `image_search`(`image_search`, rowid, `body`) VALUES ('delete', old.`docid`, old.`body`);
	INSERT INTO `image_search`(rowid, `body`) VALUES (new.`docid`, new.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `images_search_ai` AFTER INSERT ON `images` BEGIN
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`) VALUES (new.`id`, NULL, new.`filename`);
END;
--> statement-breakpoint
CREATE TRIGGER `images_search_ad` AFTER DELETE ON `images` BEGIN
	DELETE FROM `search_docs` WHERE `image_id` = old.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `images_search_au` AFTER UPDATE OF `id`, `filename` ON `images` BEGIN
	DELETE FROM `search_docs` WHERE `image_id` = old.`id`;
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`) VALUES (new.`id`, NULL, new.`filename`);
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT new.`id`, a.`id`, a.`title` FROM `album_images` ai JOIN `albums` a ON a.`id` = ai.`album_id`
		WHERE ai.`image_id` = new.`id` AND a.`is_public` = 1 AND a.`deleted_at` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `album_images_search_ai` AFTER INSERT ON `album_images` BEGIN
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT new.`image_id`, a.`id`, a.`title` FROM `albums` a
		WHERE a.`id` = new.`album_id` AND a.`is_public` = 1 AND a.`deleted_at` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `album_images_search_ad` AFTER DELETE ON `album_images` BEGIN
	DELETE FROM `search_docs` WHERE `image_id` = old.`image_id` AND `album_id` = old.`album_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `album_images_search_au` AFTER UPDATE ON `album_images` BEGIN
	DELETE FROM `search_docs` WHERE `image_id` = old.`image_id` AND `album_id` = old.`album_id`;
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT new.`image_id`, a.`id`, a.`title` FROM `albums` a
		WHERE a.`id` = new.`album_id` AND a.`is_public` = 1 AND a.`deleted_at` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `albums_search_au` AFTER UPDATE OF `id`, `title`, `is_public`, `deleted_at` ON `albums` BEGIN
	DELETE FROM `search_docs` WHERE `album_id` = old.`id`;
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT ai.`image_id`, new.`id`, new.`title` FROM `album_images` ai
		WHERE ai.`album_id` = new.`id` AND new.`is_public` = 1 AND new.`deleted_at` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `albums_search_ad` AFTER DELETE ON `albums` BEGIN
	DELETE FROM `search_docs` WHERE `album_id` = old.`id`;
END;
--> statement-breakpoint
-- Index what already exists.
INSERT INTO `search_docs`(`image_id`, `album_id`, `body`) SELECT `id`, NULL, `filename` FROM `images`;
--> statement-breakpoint
INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
	SELECT ai.`image_id`, a.`id`, a.`title` FROM `album_images` ai JOIN `albums` a ON a.`id` = ai.`album_id`
	WHERE a.`is_public` = 1 AND a.`deleted_at` IS NULL;
