ALTER TABLE `images` ADD `phash_tried` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `images_phash_todo` ON `images` (`id`) WHERE phash IS NULL AND phash_tried = 0;