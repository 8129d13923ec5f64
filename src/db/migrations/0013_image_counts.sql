CREATE TABLE `image_counts` (
	`owner_id` integer NOT NULL,
	`day` integer NOT NULL,
	`images` integer DEFAULT 0 NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	`public` integer DEFAULT 0 NOT NULL,
	`nsfw` integer DEFAULT 0 NOT NULL,
	`public_nsfw` integer DEFAULT 0 NOT NULL,
	`shown` integer DEFAULT 0 NOT NULL,
	`listed` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`owner_id`, `day`)
);
--> statement-breakpoint
DROP INDEX `images_feed`;--> statement-breakpoint
CREATE INDEX `images_user_size` ON `images` (`user_id`,`size`);--> statement-breakpoint
CREATE INDEX `images_user_views` ON `images` (`user_id`,`views`);--> statement-breakpoint
CREATE INDEX `images_listed` ON `images` (`created_at`) WHERE visibility = 'public' AND nsfw = 0 AND scan_status <> 'pending';--> statement-breakpoint
CREATE INDEX `images_user_expires` ON `images` (`user_id`,`expires_at`) WHERE expires_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `users_banned` ON `users` (`id`) WHERE banned = 1;