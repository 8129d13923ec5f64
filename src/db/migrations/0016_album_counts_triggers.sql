-- Album counts (custom migration; drizzle-kit does not model triggers): albums.image_count and public_count follow
-- album_images and their images' visibility inside the statement that changes them, so listing albums counts no rows.
CREATE TRIGGER `album_counts_ai` AFTER INSERT ON `album_images` BEGIN
	UPDATE `albums` SET
		`image_count` = `image_count` + 1,
		`public_count` = `public_count`
			+ coalesce((SELECT `visibility` = 'public' FROM `images` WHERE `id` = new.`image_id`), 0)
	WHERE `id` = new.`album_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `album_counts_ad` AFTER DELETE ON `album_images` BEGIN
	UPDATE `albums` SET
		`image_count` = `image_count` - 1,
		`public_count` = `public_count`
			- coalesce((SELECT `visibility` = 'public' FROM `images` WHERE `id` = old.`image_id`), 0)
	WHERE `id` = old.`album_id`;
END;
--> statement-breakpoint
-- An image leaves its albums before its row goes, so the trigger above still reads its visibility (the foreign key's
-- cascade would remove the memberships once the image row is gone).
CREATE TRIGGER `images_leave_albums` BEFORE DELETE ON `images` BEGIN
	DELETE FROM `album_images` WHERE `image_id` = old.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `images_album_counts_au` AFTER UPDATE OF `visibility` ON `images`
	WHEN old.`visibility` <> new.`visibility`
BEGIN
	UPDATE `albums` SET `public_count` = `public_count` + CASE WHEN new.`visibility` = 'public' THEN 1 ELSE -1 END
	WHERE `id` IN (SELECT `album_id` FROM `album_images` WHERE `image_id` = new.`id`);
END;
--> statement-breakpoint
-- Count what already exists.
UPDATE `albums` SET
	`image_count` = (SELECT count(*) FROM `album_images` ai WHERE ai.`album_id` = `albums`.`id`),
	`public_count` = (SELECT count(*) FROM `album_images` ai JOIN `images` i ON i.`id` = ai.`image_id`
		WHERE ai.`album_id` = `albums`.`id` AND i.`visibility` = 'public');
