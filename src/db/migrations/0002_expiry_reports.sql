CREATE TABLE `blocked_hashes` (
	`sha256` text PRIMARY KEY NOT NULL,
	`image_id` text NOT NULL,
	`report_id` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`report_id`) REFERENCES `reports`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE TABLE `reports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`image_id` text NOT NULL,
	`image_owner_id` integer,
	`image_sha256` text NOT NULL,
	`reason` text NOT NULL,
	`details` text,
	`reporter_ip` text NOT NULL,
	`status` text DEFAULT 'open' NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`resolved_at` integer,
	`resolved_by` integer,
	FOREIGN KEY (`image_owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`resolved_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `reports_status_created` ON `reports` (`status`,`created_at`);--> statement-breakpoint
CREATE INDEX `reports_image` ON `reports` (`image_id`,`status`);--> statement-breakpoint
CREATE INDEX `images_expires` ON `images` (`expires_at`) WHERE expires_at IS NOT NULL;