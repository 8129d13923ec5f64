ALTER TABLE "users" ADD COLUMN "storage_limit" bigint;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "uploads_per_hour" integer;