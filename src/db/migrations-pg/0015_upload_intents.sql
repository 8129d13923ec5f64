CREATE TABLE "upload_intents" (
	"id" text PRIMARY KEY NOT NULL,
	"ext" text NOT NULL,
	"instance" text NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
CREATE INDEX "upload_intents_created" ON "upload_intents" USING btree ("created_at");