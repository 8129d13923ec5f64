CREATE TABLE `variant_failures` (
	`key` text PRIMARY KEY NOT NULL,
	`image_id` text NOT NULL,
	`reason` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`image_id`) REFERENCES `images`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `variant_failures_image` ON `variant_failures` (`image_id`);--> statement-breakpoint
ALTER TABLE `images` ADD `frames` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `images` ADD `filter_passes` integer DEFAULT 0 NOT NULL;