import { sql } from 'drizzle-orm'
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * An image the gallery may show, bans and expiry aside: public, not NSFW, not waiting for a scan. Literal, so the
 * planner can use the partial index images_listed for a query carrying the same condition.
 */
export const listedImage = sql`visibility = 'public' AND nsfw = 0 AND scan_status <> 'pending'`

const createdAt = () =>
  integer('created_at', { mode: 'timestamp_ms' }).notNull().default(sql`(unixepoch('subsec') * 1000)`)

export const users = sqliteTable(
  'users',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    username: text('username').notNull(),
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    role: text('role', { enum: ['user', 'admin'] })
      .notNull()
      .default('user'),
    emailVerified: integer('email_verified', { mode: 'boolean' }).notNull().default(false),
    privateAccount: integer('private_account', { mode: 'boolean' }).notNull().default(false),
    banned: integer('banned', { mode: 'boolean' }).notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    // Uniqueness is case-insensitive, as DECISIONS.md requires.
    uniqueIndex('users_username_lower').on(sql`lower(${t.username})`),
    uniqueIndex('users_email_lower').on(sql`lower(${t.email})`),
    // The gallery's total leaves out the images of banned accounts: few, found here.
    index('users_banned').on(t.id).where(sql`banned = 1`),
  ],
)

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    /** SHA-256 of the secret, hex; the secret itself is never stored. */
    secretHash: text('secret_hash').notNull().unique(),
    createdAt: createdAt(),
    lastUsedAt: integer('last_used_at', { mode: 'timestamp_ms' }),
  },
  (t) => [index('api_keys_user').on(t.userId)],
)

/** Single-use tokens sent by email: address verification, and password reset. */
export const verificationTokens = sqliteTable('verification_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  usedAt: integer('used_at', { mode: 'timestamp_ms' }),
  purpose: text('purpose', { enum: ['verify', 'reset'] })
    .notNull()
    .default('verify'),
})

/** One row per signed-in JWT (its `sid`): ending a session deletes its row, and the token stops working. */
export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    lastUsedAt: integer('last_used_at', { mode: 'timestamp_ms' }),
    /** When the JWT's `exp` passes: the row can go then. */
    expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
    userAgent: text('user_agent'),
    ip: text('ip'),
  },
  (t) => [index('sessions_user').on(t.userId), index('sessions_expires').on(t.expiresAt)],
)

/** Registration invites (REGISTRATION=invite): `used` counts up to `maxUses`. */
export const invites = sqliteTable('invites', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  code: text('code').notNull().unique(),
  createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
  maxUses: integer('max_uses').notNull(),
  used: integer('used').notNull().default(0),
  /** Null: never expires. */
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }),
  createdAt: createdAt(),
})

/** WebAuthn credentials (passkeys): an account signs in with any of them instead of its password. */
export const passkeys = sqliteTable(
  'passkeys',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The credential id, base64url, as the authenticator names it. */
    credentialId: text('credential_id').notNull().unique(),
    /** The COSE public key. */
    publicKey: blob('public_key', { mode: 'buffer' }).notNull(),
    /** The authenticator's signature counter (0 for those that keep none). */
    counter: integer('counter').notNull().default(0),
    /** JSON array of the transports the browser reported (usb, internal, hybrid...). */
    transports: text('transports').notNull().default('[]'),
    name: text('name').notNull(),
    createdAt: createdAt(),
    lastUsedAt: integer('last_used_at', { mode: 'timestamp_ms' }),
  },
  (t) => [index('passkeys_user').on(t.userId)],
)

/** An account's TOTP second factor (owned by the auth feature): a row while being set up, enabled once confirmed. */
export const totpSecrets = sqliteTable('totp_secrets', {
  userId: integer('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  /** The shared secret (base32), sealed with AES-256-GCM under the TOTP key (src/lib/secrets.ts). */
  secret: text('secret').notNull(),
  /** Null while being set up: login asks for a code only once it is enabled. */
  enabledAt: integer('enabled_at', { mode: 'timestamp_ms' }),
  /** The time step of the last accepted code: a code of that step or an earlier one is refused (no replay). */
  lastStep: integer('last_step'),
  createdAt: createdAt(),
})

/** Single-use recovery codes of an account's TOTP, by SHA-256 (they are random, so a fast hash suffices). */
export const recoveryCodes = sqliteTable(
  'recovery_codes',
  {
    codeHash: text('code_hash').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    usedAt: integer('used_at', { mode: 'timestamp_ms' }),
  },
  (t) => [index('recovery_codes_user').on(t.userId)],
)

/** Accounts signed in through OIDC single sign-on: the provider's subject, per issuer, to the account. */
export const oidcIdentities = sqliteTable(
  'oidc_identities',
  {
    issuer: text('issuer').notNull(),
    subject: text('subject').notNull(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.issuer, t.subject] }), index('oidc_identities_user').on(t.userId)],
)

/**
 * Sign-ins and ceremonies in progress (passkey challenges, OIDC flows): what the answer to a challenge or a provider's
 * redirect must find again, whichever instance it reaches. Single use: taking one deletes it.
 */
export const authFlows = sqliteTable(
  'auth_flows',
  {
    key: text('key').primaryKey(),
    kind: text('kind', { enum: ['passkey', 'oidc'] }).notNull(),
    /** What the flow carries, as JSON (its own shape per kind). */
    data: text('data').notNull(),
    expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [index('auth_flows_expires').on(t.expiresAt)],
)

export const embedProfiles = sqliteTable(
  'embed_profiles',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    title: text('title'),
    description: text('description'),
    color: text('color'),
    authorName: text('author_name'),
    authorUrl: text('author_url'),
    siteName: text('site_name'),
    createdAt: createdAt(),
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull().default(sql`(unixepoch('subsec') * 1000)`),
  },
  (t) => [index('embed_profiles_user').on(t.userId)],
)

export const images = sqliteTable(
  'images',
  {
    id: text('id').primaryKey(),
    /** Null for anonymous uploads. */
    userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
    filename: text('filename').notNull(),
    mime: text('mime').notNull(),
    ext: text('ext').notNull(),
    width: integer('width').notNull(),
    height: integer('height').notNull(),
    size: integer('size').notNull(),
    sha256: text('sha256').notNull(),
    /** 64-bit perceptual hash, 16 hex digits (src/media/phash.ts); null for a picture too plain to hash, or older rows. */
    phash: text('phash'),
    /**
     * The perceptual hash was computed (at upload, or by the backfill of rows stored before 0008:
     * src/modules/images/phash-backfill.ts), so a null `phash` (too plain) is not tried again. A flag of its own, so
     * `phash` keeps meaning "the hash, or none" for the blocklist.
     */
    phashTried: integer('phash_tried', { mode: 'boolean' }).notNull().default(false),
    visibility: text('visibility', { enum: ['public', 'private'] })
      .notNull()
      .default('public'),
    nsfw: integer('nsfw', { mode: 'boolean' }).notNull().default(false),
    /** 'pending' while an automatic scan has not given a verdict; such images stay out of public feeds. */
    scanStatus: text('scan_status', { enum: ['none', 'pending', 'done'] })
      .notNull()
      .default('none'),
    views: integer('views').notNull().default(0),
    /** SHA-256 of the upload's delete token (the anonymous `deleteToken`, the token of every `deletePage` link). */
    deleteTokenHash: text('delete_token_hash'),
    embedProfileId: integer('embed_profile_id').references(() => embedProfiles.id, { onDelete: 'set null' }),
    uploaderIp: text('uploader_ip'),
    createdAt: createdAt(),
    expiresAt: integer('expires_at', { mode: 'timestamp_ms' }),
    /**
     * What making sizes of it costs, read from its header at upload (src/media/work.ts): the frames of an animation (1
     * for a still picture), and an SVG's filter passes. Rows stored before migration 0017 (PostgreSQL 0009) have 1
     * and 0: their sizes are decided by the media worker instead, which reads the file.
     */
    frames: integer('frames').notNull().default(1),
    filterPasses: integer('filter_passes').notNull().default(0),
  },
  (t) => [
    // An owner's list newest (or oldest) first; SQLite ends every index with the rowid, the tie order.
    index('images_user_created').on(t.userId, t.createdAt),
    index('images_user_size').on(t.userId, t.size),
    index('images_user_views').on(t.userId, t.views),
    // The gallery (and search) newest first: only the images it may show (listedImage), so no step skips others.
    index('images_listed').on(t.createdAt).where(listedImage),
    index('images_pending').on(t.scanStatus),
    index('images_sha256').on(t.sha256),
    // duplicateOf: an account's own images with the same perceptual hash.
    index('images_user_phash').on(t.userId, t.phash),
    // The backfill's lookup, by id: only rows still to hash (rows stored before 0008), so it stays empty after it.
    index('images_phash_todo').on(t.id).where(sql`phash IS NULL AND phash_tried = 0`),
    // The expiry sweeper's lookup; most images never expire, so only those that do are indexed.
    index('images_expires').on(t.expiresAt).where(sql`expires_at IS NOT NULL`),
    // An owner's expired images not swept yet, which the counts still hold (image_counts).
    index('images_user_expires').on(t.userId, t.expiresAt).where(sql`expires_at IS NOT NULL`),
  ],
)

/**
 * How many images each owner holds, per day of upload (UTC days since the epoch, `created_at / 86400000`): kept by
 * triggers in the transaction of every write of images (migrations/0014_image_counts.sql), so no read counts rows.
 * `owner_id` is the user's id, 0 for anonymous uploads, -1 for every image (EVERYONE). Counts include expired images
 * not yet swept (reads take those off, found through images_expires) and banned owners' images (the gallery takes
 * those off, found through users_banned). Per day, so a deep page is found by summing days, not by walking rows.
 */
export const imageCounts = sqliteTable(
  'image_counts',
  {
    ownerId: integer('owner_id').notNull(),
    day: integer('day').notNull(),
    images: integer('images').notNull().default(0),
    bytes: integer('bytes').notNull().default(0),
    /** Public ones (the rest are private). */
    public: integer('public').notNull().default(0),
    nsfw: integer('nsfw').notNull().default(0),
    publicNsfw: integer('public_nsfw').notNull().default(0),
    /** Public and not waiting for a scan: what a profile shows. */
    shown: integer('shown').notNull().default(0),
    /** What the gallery shows (listedImage), before bans. */
    listed: integer('listed').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.ownerId, t.day] })],
)

export const albums = sqliteTable(
  'albums',
  {
    id: text('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    title: text('title').notNull(),
    description: text('description').notNull().default(''),
    isPublic: integer('is_public', { mode: 'boolean' }).notNull().default(false),
    passwordHash: text('password_hash'),
    createdAt: createdAt(),
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull().default(sql`(unixepoch('subsec') * 1000)`),
    deletedAt: integer('deleted_at', { mode: 'timestamp_ms' }),
    /**
     * How many images the album holds, and how many of them are public: kept by triggers on album_images and images
     * (migrations/0016_album_counts.sql), expired ones not swept yet included (reads take those off).
     */
    imageCount: integer('image_count').notNull().default(0),
    publicCount: integer('public_count').notNull().default(0),
  },
  (t) => [index('albums_user').on(t.userId, t.deletedAt)],
)

export const albumImages = sqliteTable(
  'album_images',
  {
    albumId: text('album_id')
      .notNull()
      .references(() => albums.id, { onDelete: 'cascade' }),
    imageId: text('image_id')
      .notNull()
      .references(() => images.id, { onDelete: 'cascade' }),
    addedAt: integer('added_at', { mode: 'timestamp_ms' }).notNull().default(sql`(unixepoch('subsec') * 1000)`),
  },
  (t) => [
    primaryKey({ columns: [t.albumId, t.imageId] }),
    index('album_images_image').on(t.imageId),
    // An album's images, the most recently added first (its page, its cover).
    index('album_images_added').on(t.albumId, t.addedAt),
  ],
)

/** Fixed upload windows (per account `user:<id>` or per anonymous IP `ip:<addr>`), persisted so restarts keep them. */
export const uploadWindows = sqliteTable('upload_windows', {
  key: text('key').primaryKey(),
  windowStart: integer('window_start', { mode: 'timestamp_ms' }).notNull(),
  used: integer('used').notNull(),
})

/** Abuse reports about images; kept after the image is gone, as the record of what was decided. */
export const reports = sqliteTable(
  'reports',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    /** Not a foreign key: the report outlives the image it is about. */
    imageId: text('image_id').notNull(),
    /** The reported image's owner and uploaded bytes at report time, so an action still works once the image is gone. */
    imageOwnerId: integer('image_owner_id').references(() => users.id, { onDelete: 'set null' }),
    imageSha256: text('image_sha256').notNull(),
    imagePhash: text('image_phash'),
    reason: text('reason', { enum: ['illegal', 'nsfw', 'copyright', 'spam', 'other'] }).notNull(),
    details: text('details'),
    reporterIp: text('reporter_ip').notNull(),
    status: text('status', { enum: ['open', 'dismissed', 'actioned'] })
      .notNull()
      .default('open'),
    createdAt: createdAt(),
    resolvedAt: integer('resolved_at', { mode: 'timestamp_ms' }),
    resolvedBy: integer('resolved_by').references(() => users.id, { onDelete: 'set null' }),
  },
  (t) => [index('reports_status_created').on(t.status, t.createdAt), index('reports_image').on(t.imageId, t.status)],
)

/**
 * Blocked pictures (src/modules/blocks): an upload within BLOCK_HAMMING_DISTANCE of `phash`, or carrying bytes of one of
 * its `block_sha256s`, is refused. Made by a report action, an admin's block of an image, or the CLI.
 */
export const blocks = sqliteTable(
  'blocks',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    /** 16 hex digits; null when the picture had none (too plain to hash): then its bytes alone are blocked. */
    phash: text('phash'),
    reason: text('reason').notNull(),
    source: text('source', { enum: ['report', 'admin', 'cli', 'import'] }).notNull(),
    /** The removed image and the report acted on, when there were; not foreign keys, the block outlives them. */
    imageId: text('image_id'),
    reportId: integer('report_id'),
    /** The removed image's WebP thumbnail, kept only when the operator asked for it. */
    thumbnail: blob('thumbnail', { mode: 'buffer' }),
    createdAt: createdAt(),
  },
  (t) => [index('blocks_created').on(t.createdAt)],
)

/** SHA-256 of blocked bytes (as uploaded and as stored), each of one block. */
export const blockSha256s = sqliteTable(
  'block_sha256s',
  {
    sha256: text('sha256').primaryKey(),
    blockId: integer('block_id')
      .notNull()
      .references(() => blocks.id, { onDelete: 'cascade' }),
  },
  (t) => [index('block_sha256s_block').on(t.blockId)],
)

/**
 * Resumable (tus 1.0) uploads in progress, and for a while their outcome. The bytes are in `DATA_DIR/tus/<id>`;
 * a finished upload goes through the upload pipeline and keeps only its answer here, until `expiresAt`.
 */
export const tusUploads = sqliteTable(
  'tus_uploads',
  {
    /** Random, unguessable: the upload URL is the only capability an anonymous uploader holds. */
    id: text('id').primaryKey(),
    /** Null for anonymous web uploads. */
    userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
    /** Which endpoint made it: `api` (/api/v1/tus, API key) or `web` (/api/tus, JWT or anonymous). */
    endpoint: text('endpoint', { enum: ['api', 'web'] }).notNull(),
    ip: text('ip').notNull(),
    length: integer('length').notNull(),
    offset: integer('offset').notNull().default(0),
    /** The Upload-Metadata header as the client sent it (echoed by HEAD). */
    metadata: text('metadata').notNull().default(''),
    createdAt: createdAt(),
    expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
    finishedAt: integer('finished_at', { mode: 'timestamp_ms' }),
    /** The pipeline's answer once finished: its status and JSON body (success or error). */
    resultStatus: integer('result_status'),
    result: text('result'),
    /**
     * Until when a request holds the upload (writing to it or finishing it): one at a time, across instances. Null, or
     * past: free. Renewed while the request runs, so a crashed instance's claim runs out.
     */
    claimedUntil: integer('claimed_until', { mode: 'timestamp_ms' }),
  },
  (t) => [
    index('tus_uploads_user').on(t.userId),
    index('tus_uploads_ip').on(t.ip),
    index('tus_uploads_expires').on(t.expiresAt),
  ],
)

/** Per-account HTTP endpoints notified of image events (at most 5 per account). */
export const webhooks = sqliteTable(
  'webhooks',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    /** Signing key of the HMAC-SHA256 signatures; kept in clear since every delivery needs it. */
    secret: text('secret').notNull(),
    /** JSON array of event names. */
    events: text('events').notNull(),
    createdAt: createdAt(),
    lastDeliveryAt: integer('last_delivery_at', { mode: 'timestamp_ms' }),
    /** HTTP status of the last attempt; null before any, 0 when no answer came (network error, refused address). */
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
  },
  (t) => [index('webhooks_user').on(t.userId)],
)

/**
 * Stored variants of images (src/modules/variants): presets and signed sizes made on first request, counted against
 * VARIANT_STORAGE_LIMIT and evicted least recently used first. No foreign key: an image's removal deletes its variants'
 * files first (the rows say which), and the orphan sweep drops rows whose image went another way.
 */
export const variants = sqliteTable(
  'variants',
  {
    key: text('key').primaryKey(),
    imageId: text('image_id').notNull(),
    bytes: integer('bytes').notNull(),
    createdAt: createdAt(),
    lastUsedAt: integer('last_used_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [index('variants_image').on(t.imageId), index('variants_last_used').on(t.lastUsedAt)],
)

/**
 * Sizes (presets, signed sizes) whose making failed (undecodable, past a media budget, predicted too costly by the
 * worker), with the reason: every instance answers them at once with it, and never runs the job again. Removed with
 * the image.
 */
export const variantFailures = sqliteTable(
  'variant_failures',
  {
    key: text('key').primaryKey(),
    imageId: text('image_id')
      .notNull()
      .references(() => images.id, { onDelete: 'cascade' }),
    reason: text('reason').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('variant_failures_image').on(t.imageId)],
)

/** One row, rewritten by /healthz (at most once a second) to prove the database can still be written. */
export const healthProbe = sqliteTable('health_probe', {
  id: integer('id').primaryKey(),
  checkedAt: integer('checked_at', { mode: 'timestamp_ms' }).notNull(),
})

export type User = typeof users.$inferSelect
export type ApiKey = typeof apiKeys.$inferSelect
export type Passkey = typeof passkeys.$inferSelect
export type TotpSecret = typeof totpSecrets.$inferSelect
export type Session = typeof sessions.$inferSelect
export type Invite = typeof invites.$inferSelect
export type Image = typeof images.$inferSelect
export type ImageCounts = typeof imageCounts.$inferSelect
export type Album = typeof albums.$inferSelect
export type EmbedProfile = typeof embedProfiles.$inferSelect
export type Report = typeof reports.$inferSelect
export type Block = typeof blocks.$inferSelect
export type TusUpload = typeof tusUploads.$inferSelect
export type Webhook = typeof webhooks.$inferSelect
