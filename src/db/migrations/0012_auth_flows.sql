CREATE TABLE `auth_flows` (
	`key` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`data` text NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `auth_flows_expires` ON `auth_flows` (`expires_at`);