CREATE TABLE `variants` (
	`key` text PRIMARY KEY NOT NULL,
	`image_id` text NOT NULL,
	`bytes` integer NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`last_used_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `variants_image` ON `variants` (`image_id`);--> statement-breakpoint
CREATE INDEX `variants_last_used` ON `variants` (`last_used_at`);