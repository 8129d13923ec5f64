CREATE TABLE `tus_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` integer,
	`endpoint` text NOT NULL,
	`ip` text NOT NULL,
	`length` integer NOT NULL,
	`offset` integer DEFAULT 0 NOT NULL,
	`metadata` text DEFAULT '' NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`expires_at` integer NOT NULL,
	`finished_at` integer,
	`result_status` integer,
	`result` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tus_uploads_user` ON `tus_uploads` (`user_id`);--> statement-breakpoint
CREATE INDEX `tus_uploads_ip` ON `tus_uploads` (`ip`);--> statement-breakpoint
CREATE INDEX `tus_uploads_expires` ON `tus_uploads` (`expires_at`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`url` text NOT NULL,
	`secret` text NOT NULL,
	`events` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`last_delivery_at` integer,
	`last_status` integer,
	`last_error` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhooks_user` ON `webhooks` (`user_id`);