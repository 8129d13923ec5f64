ALTER TABLE `users` ADD `storage_limit` integer;--> statement-breakpoint
ALTER TABLE `users` ADD `uploads_per_hour` integer;