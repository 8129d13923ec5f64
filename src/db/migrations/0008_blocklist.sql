CREATE TABLE `block_sha256s` (
	`sha256` text PRIMARY KEY NOT NULL,
	`block_id` integer NOT NULL,
	FOREIGN KEY (`block_id`) REFERENCES `blocks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `block_sha256s_block` ON `block_sha256s` (`block_id`);--> statement-breakpoint
CREATE TABLE `blocks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`phash` text,
	`reason` text NOT NULL,
	`source` text NOT NULL,
	`image_id` text,
	`report_id` integer,
	`thumbnail` blob,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `blocks_created` ON `blocks` (`created_at`);--> statement-breakpoint
ALTER TABLE `images` ADD `phash` text;--> statement-breakpoint
CREATE INDEX `images_user_phash` ON `images` (`user_id`,`phash`);--> statement-breakpoint
ALTER TABLE `reports` ADD `image_phash` text;--> statement-breakpoint
-- Hand-written: the SHA-256 blocks of report actions move into blocks (one per removed image) and block_sha256s.
INSERT INTO `blocks` (`reason`, `source`, `image_id`, `report_id`, `created_at`)
SELECT 'Removed after an abuse report', 'report', `image_id`, max(`report_id`), min(`created_at`) FROM `blocked_hashes` GROUP BY `image_id`;--> statement-breakpoint
INSERT INTO `block_sha256s` (`sha256`, `block_id`)
SELECT h.`sha256`, b.`id` FROM `blocked_hashes` h JOIN `blocks` b ON b.`image_id` = h.`image_id`;--> statement-breakpoint
DROP TABLE `blocked_hashes`;