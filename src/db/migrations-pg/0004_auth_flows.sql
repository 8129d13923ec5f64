CREATE TABLE "auth_flows" (
	"key" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"data" text NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "auth_flows_expires" ON "auth_flows" USING btree ("expires_at");