CREATE TABLE `health_probe` (
	`id` integer PRIMARY KEY NOT NULL,
	`checked_at` integer NOT NULL
);
--> statement-breakpoint
-- Search (0001_search_fts) indexes album titles of public, live albums; a password-protected album's title must not
-- be indexed either, or a search for it finds the images it guards. The album triggers are made again with
-- `password_hash IS NULL`, the albums trigger also fires when the password changes, and album documents are re-indexed.
DROP TRIGGER `images_search_au`;
--> statement-breakpoint
CREATE TRIGGER `images_search_au` AFTER UPDATE OF `id`, `filename` ON `images` BEGIN
	DELETE FROM `search_docs` WHERE `image_id` = old.`id`;
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`) VALUES (new.`id`, NULL, new.`filename`);
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT new.`id`, a.`id`, a.`title` FROM `album_images` ai JOIN `albums` a ON a.`id` = ai.`album_id`
		WHERE ai.`image_id` = new.`id` AND a.`is_public` = 1 AND a.`deleted_at` IS NULL AND a.`password_hash` IS NULL;
END;
--> statement-breakpoint
DROP TRIGGER `album_images_search_ai`;
--> statement-breakpoint
CREATE TRIGGER `album_images_search_ai` AFTER INSERT ON `album_images` BEGIN
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT new.`image_id`, a.`id`, a.`title` FROM `albums` a
		WHERE a.`id` = new.`album_id` AND a.`is_public` = 1 AND a.`deleted_at` IS NULL AND a.`password_hash` IS NULL;
END;
--> statement-breakpoint
DROP TRIGGER `album_images_search_au`;
--> statement-breakpoint
CREATE TRIGGER `album_images_search_au` AFTER UPDATE ON `album_images` BEGIN
	DELETE FROM `search_docs` WHERE `image_id` = old.`image_id` AND `album_id` = old.`album_id`;
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT new.`image_id`, a.`id`, a.`title` FROM `albums` a
		WHERE a.`id` = new.`album_id` AND a.`is_public` = 1 AND a.`deleted_at` IS NULL AND a.`password_hash` IS NULL;
END;
--> statement-breakpoint
DROP TRIGGER `albums_search_au`;
--> statement-breakpoint
CREATE TRIGGER `albums_search_au` AFTER UPDATE OF `id`, `title`, `is_public`, `deleted_at`, `password_hash` ON `albums` BEGIN
	DELETE FROM `search_docs` WHERE `album_id` = old.`id`;
	INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
		SELECT ai.`image_id`, new.`id`, new.`title` FROM `album_images` ai
		WHERE ai.`album_id` = new.`id` AND new.`is_public` = 1 AND new.`deleted_at` IS NULL AND new.`password_hash` IS NULL;
END;
--> statement-breakpoint
DELETE FROM `search_docs` WHERE `album_id` IS NOT NULL;
--> statement-breakpoint
INSERT INTO `search_docs`(`image_id`, `album_id`, `body`)
	SELECT ai.`image_id`, a.`id`, a.`title` FROM `album_images` ai JOIN `albums` a ON a.`id` = ai.`album_id`
	WHERE a.`is_public` = 1 AND a.`deleted_at` IS NULL AND a.`password_hash` IS NULL;
