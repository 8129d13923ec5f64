ALTER TABLE `albums` ADD `image_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `albums` ADD `public_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `album_images_added` ON `album_images` (`album_id`,`added_at`);