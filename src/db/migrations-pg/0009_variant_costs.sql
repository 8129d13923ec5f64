CREATE TABLE "variant_failures" (
	"key" text PRIMARY KEY NOT NULL,
	"image_id" text NOT NULL,
	"reason" text NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
ALTER TABLE "images" ADD COLUMN "frames" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "images" ADD COLUMN "filter_passes" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "variant_failures" ADD CONSTRAINT "variant_failures_image_id_images_id_fk" FOREIGN KEY ("image_id") REFERENCES "public"."images"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "variant_failures_image" ON "variant_failures" USING btree ("image_id");