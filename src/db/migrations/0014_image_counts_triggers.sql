-- Image counts (custom migration; drizzle-kit does not model triggers): image_counts (src/db/schema-sqlite.ts) follows
-- every insert, delete and change of an images row inside the statement that makes it, so every write path (uploads,
-- deletes, the expiry sweep, PATCH, scan verdicts, imports, restores, copies between engines) keeps the counts
-- without application code, and no read counts rows. Each row adds to its owner's day (0: anonymous) and to
-- everyone's (-1). Foreign-key cascades (an account's removal) fire these triggers too.
CREATE TRIGGER `image_counts_ai` AFTER INSERT ON `images` BEGIN
	INSERT INTO `image_counts` (`owner_id`, `day`, `images`, `bytes`, `public`, `nsfw`, `public_nsfw`, `shown`, `listed`)
		SELECT o.`id`, new.`created_at` / 86400000,
			1,
			new.`size`,
			(new.`visibility` = 'public'),
			new.`nsfw`,
			(new.`visibility` = 'public' AND new.`nsfw`),
			(new.`visibility` = 'public' AND new.`scan_status` <> 'pending'),
			(new.`visibility` = 'public' AND NOT new.`nsfw` AND new.`scan_status` <> 'pending')
		FROM (SELECT coalesce(new.`user_id`, 0) AS `id` UNION ALL SELECT -1) AS o WHERE true
		ON CONFLICT (`owner_id`, `day`) DO UPDATE SET
			`images` = `images` + excluded.`images`,
			`bytes` = `bytes` + excluded.`bytes`,
			`public` = `public` + excluded.`public`,
			`nsfw` = `nsfw` + excluded.`nsfw`,
			`public_nsfw` = `public_nsfw` + excluded.`public_nsfw`,
			`shown` = `shown` + excluded.`shown`,
			`listed` = `listed` + excluded.`listed`;
END;
--> statement-breakpoint
CREATE TRIGGER `image_counts_ad` AFTER DELETE ON `images` BEGIN
	INSERT INTO `image_counts` (`owner_id`, `day`, `images`, `bytes`, `public`, `nsfw`, `public_nsfw`, `shown`, `listed`)
		SELECT o.`id`, old.`created_at` / 86400000,
			-1,
			-old.`size`,
			-(old.`visibility` = 'public'),
			-old.`nsfw`,
			-(old.`visibility` = 'public' AND old.`nsfw`),
			-(old.`visibility` = 'public' AND old.`scan_status` <> 'pending'),
			-(old.`visibility` = 'public' AND NOT old.`nsfw` AND old.`scan_status` <> 'pending')
		FROM (SELECT coalesce(old.`user_id`, 0) AS `id` UNION ALL SELECT -1) AS o WHERE true
		ON CONFLICT (`owner_id`, `day`) DO UPDATE SET
			`images` = `images` + excluded.`images`,
			`bytes` = `bytes` + excluded.`bytes`,
			`public` = `public` + excluded.`public`,
			`nsfw` = `nsfw` + excluded.`nsfw`,
			`public_nsfw` = `public_nsfw` + excluded.`public_nsfw`,
			`shown` = `shown` + excluded.`shown`,
			`listed` = `listed` + excluded.`listed`;
END;
--> statement-breakpoint
CREATE TRIGGER `image_counts_au` AFTER UPDATE OF `user_id`, `created_at`, `size`, `visibility`, `nsfw`, `scan_status`
	ON `images`
	WHEN old.`user_id` IS NOT new.`user_id` OR old.`created_at` <> new.`created_at` OR old.`size` <> new.`size`
		OR old.`visibility` <> new.`visibility` OR old.`nsfw` <> new.`nsfw` OR old.`scan_status` <> new.`scan_status`
BEGIN
	INSERT INTO `image_counts` (`owner_id`, `day`, `images`, `bytes`, `public`, `nsfw`, `public_nsfw`, `shown`, `listed`)
		SELECT o.`id`, old.`created_at` / 86400000,
			-1,
			-old.`size`,
			-(old.`visibility` = 'public'),
			-old.`nsfw`,
			-(old.`visibility` = 'public' AND old.`nsfw`),
			-(old.`visibility` = 'public' AND old.`scan_status` <> 'pending'),
			-(old.`visibility` = 'public' AND NOT old.`nsfw` AND old.`scan_status` <> 'pending')
		FROM (SELECT coalesce(old.`user_id`, 0) AS `id` UNION ALL SELECT -1) AS o WHERE true
		ON CONFLICT (`owner_id`, `day`) DO UPDATE SET
			`images` = `images` + excluded.`images`,
			`bytes` = `bytes` + excluded.`bytes`,
			`public` = `public` + excluded.`public`,
			`nsfw` = `nsfw` + excluded.`nsfw`,
			`public_nsfw` = `public_nsfw` + excluded.`public_nsfw`,
			`shown` = `shown` + excluded.`shown`,
			`listed` = `listed` + excluded.`listed`;
	INSERT INTO `image_counts` (`owner_id`, `day`, `images`, `bytes`, `public`, `nsfw`, `public_nsfw`, `shown`, `listed`)
		SELECT o.`id`, new.`created_at` / 86400000,
			1,
			new.`size`,
			(new.`visibility` = 'public'),
			new.`nsfw`,
			(new.`visibility` = 'public' AND new.`nsfw`),
			(new.`visibility` = 'public' AND new.`scan_status` <> 'pending'),
			(new.`visibility` = 'public' AND NOT new.`nsfw` AND new.`scan_status` <> 'pending')
		FROM (SELECT coalesce(new.`user_id`, 0) AS `id` UNION ALL SELECT -1) AS o WHERE true
		ON CONFLICT (`owner_id`, `day`) DO UPDATE SET
			`images` = `images` + excluded.`images`,
			`bytes` = `bytes` + excluded.`bytes`,
			`public` = `public` + excluded.`public`,
			`nsfw` = `nsfw` + excluded.`nsfw`,
			`public_nsfw` = `public_nsfw` + excluded.`public_nsfw`,
			`shown` = `shown` + excluded.`shown`,
			`listed` = `listed` + excluded.`listed`;
END;
--> statement-breakpoint
-- Count what already exists.
INSERT INTO `image_counts` (`owner_id`, `day`, `images`, `bytes`, `public`, `nsfw`, `public_nsfw`, `shown`, `listed`)
	SELECT CASE WHEN o.`everyone` THEN -1 ELSE coalesce(`user_id`, 0) END,
		`created_at` / 86400000,
		count(*),
		sum(`size`),
		sum(`visibility` = 'public'),
		sum(`nsfw`),
		sum(`visibility` = 'public' AND `nsfw`),
		sum(`visibility` = 'public' AND `scan_status` <> 'pending'),
		sum(`visibility` = 'public' AND NOT `nsfw` AND `scan_status` <> 'pending')
	FROM `images`, (SELECT 0 AS `everyone` UNION ALL SELECT 1) AS o
	GROUP BY 1, 2;
