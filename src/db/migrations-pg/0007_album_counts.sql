ALTER TABLE "albums" ADD COLUMN "image_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "albums" ADD COLUMN "public_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "album_images_added" ON "album_images" USING btree ("album_id","added_at");