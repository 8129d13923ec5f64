CREATE TABLE "image_counts" (
	"owner_id" integer NOT NULL,
	"day" integer NOT NULL,
	"images" integer DEFAULT 0 NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"public" integer DEFAULT 0 NOT NULL,
	"nsfw" integer DEFAULT 0 NOT NULL,
	"public_nsfw" integer DEFAULT 0 NOT NULL,
	"shown" integer DEFAULT 0 NOT NULL,
	"listed" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "image_counts_owner_id_day_pk" PRIMARY KEY("owner_id","day")
);
--> statement-breakpoint
DROP INDEX "images_feed";--> statement-breakpoint
CREATE INDEX "images_user_size" ON "images" USING btree ("user_id","size");--> statement-breakpoint
CREATE INDEX "images_user_views" ON "images" USING btree ("user_id","views");--> statement-breakpoint
CREATE INDEX "images_listed" ON "images" USING btree ("created_at") WHERE visibility = 'public' AND NOT nsfw AND scan_status <> 'pending';--> statement-breakpoint
CREATE INDEX "images_user_expires" ON "images" USING btree ("user_id","expires_at") WHERE expires_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX "users_banned" ON "users" USING btree ("id") WHERE banned;