CREATE TABLE `upload_intents` (
	`id` text PRIMARY KEY NOT NULL,
	`ext` text NOT NULL,
	`instance` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `upload_intents_created` ON `upload_intents` (`created_at`);