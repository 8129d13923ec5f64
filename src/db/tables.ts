/**
 * Every table, written once as a function of a column kit: schema-sqlite.ts and schema-pg.ts apply it with their
 * engine's kit, which says what a kind of column is there (a time, a flag, bytes, an integer past 2^31) and the few
 * words raw SQL needs. Both engines give the application the same JS values for the same columns
 * (test/db/schema-pg.test.ts holds them to it), and drizzle-kit generates each engine's migrations from its file.
 *
 * Typed against the SQLite kit: the repositories are written against SQLite's types (src/db/schema.ts), and naming
 * both dialects' column types generically is more type machinery than it is worth. schema-pg.ts casts its kit to this
 * one and its tables back to PostgreSQL's types.
 */
import { sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import type { Kit } from './schema-sqlite'

export function defineTables(k: Kit) {
  const accounts = accountTables(k)
  const { users } = accounts
  const media = imageTables(k, users)
  return {
    ...accounts,
    ...signInTables(k, users),
    ...media,
    ...albumTables(k, users, media.images),
    ...uploadTables(k, users),
    ...moderationTables(k, users),
    ...serviceTables(k, users, media.images),
  }
}

type Users = ReturnType<typeof accountTables>['users']
type Images = ReturnType<typeof imageTables>['images']

/** When the row was made: every table's `created_at`, now by default. */
const createdAt = (k: Kit) => k.time('created_at').notNull().default(k.now)

/** The account a row belongs to: deleting the account deletes the row. */
const ownerId = (k: Kit, users: { id: SQLiteColumn }) =>
  k
    .int('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' })

function accountTables(k: Kit) {
  const users = k.table(
    'users',
    {
      id: k.id(),
      username: k.text('username').notNull(),
      email: k.text('email').notNull(),
      passwordHash: k.text('password_hash').notNull(),
      role: k
        .text('role', { enum: ['user', 'admin'] })
        .notNull()
        .default('user'),
      emailVerified: k.flag('email_verified').notNull().default(false),
      privateAccount: k.flag('private_account').notNull().default(false),
      banned: k.flag('banned').notNull().default(false),
      /** An admin's override of the tier's storage limit, bytes; null: the tier's (src/modules/images/limits.ts). */
      storageLimit: k.big('storage_limit'),
      /** An admin's override of the tier's uploads per hour; null: the tier's. */
      uploadsPerHour: k.int('uploads_per_hour'),
      createdAt: createdAt(k),
    },
    (t) => [
      // Uniqueness is case-insensitive, as DECISIONS.md requires.
      k.uniqueIndex('users_username_lower').on(sql`lower(${t.username})`),
      k.uniqueIndex('users_email_lower').on(sql`lower(${t.email})`),
      // The gallery's total leaves out the images of banned accounts: few, found here.
      k.index('users_banned').on(t.id).where(k.isSet('banned')),
    ],
  )

  const apiKeys = k.table(
    'api_keys',
    {
      id: k.id(),
      userId: ownerId(k, users),
      name: k.text('name').notNull(),
      prefix: k.text('prefix').notNull(),
      /** SHA-256 of the secret, hex; the secret itself is never stored. */
      secretHash: k.text('secret_hash').notNull().unique(),
      createdAt: createdAt(k),
      lastUsedAt: k.time('last_used_at'),
    },
    (t) => [k.index('api_keys_user').on(t.userId)],
  )

  /** Single-use tokens sent by email: address verification, and password reset. */
  const verificationTokens = k.table('verification_tokens', {
    tokenHash: k.text('token_hash').primaryKey(),
    userId: ownerId(k, users),
    expiresAt: k.time('expires_at').notNull(),
    usedAt: k.time('used_at'),
    purpose: k
      .text('purpose', { enum: ['verify', 'reset'] })
      .notNull()
      .default('verify'),
  })

  /** One row per signed-in JWT (its `sid`): ending a session deletes its row, and the token stops working. */
  const sessions = k.table(
    'sessions',
    {
      id: k.text('id').primaryKey(),
      userId: ownerId(k, users),
      createdAt: createdAt(k),
      lastUsedAt: k.time('last_used_at'),
      /** When the JWT's `exp` passes: the row can go then. */
      expiresAt: k.time('expires_at').notNull(),
      userAgent: k.text('user_agent'),
      ip: k.text('ip'),
    },
    (t) => [k.index('sessions_user').on(t.userId), k.index('sessions_expires').on(t.expiresAt)],
  )

  /** Registration invites (REGISTRATION=invite): `used` counts up to `maxUses`. */
  const invites = k.table('invites', {
    id: k.id(),
    code: k.text('code').notNull().unique(),
    createdBy: k.int('created_by').references(() => users.id, { onDelete: 'set null' }),
    maxUses: k.int('max_uses').notNull(),
    used: k.int('used').notNull().default(0),
    /** Null: never expires. */
    expiresAt: k.time('expires_at'),
    createdAt: createdAt(k),
  })

  return { users, apiKeys, verificationTokens, sessions, invites }
}

function signInTables(k: Kit, users: Users) {
  /** WebAuthn credentials (passkeys): an account signs in with any of them instead of its password. */
  const passkeys = k.table(
    'passkeys',
    {
      id: k.id(),
      userId: ownerId(k, users),
      /** The credential id, base64url, as the authenticator names it. */
      credentialId: k.text('credential_id').notNull().unique(),
      /** The COSE public key. */
      publicKey: k.bytes('public_key').notNull(),
      /**
       * The authenticator's signature counter (0 for those that keep none): an unsigned 32-bit number, set by the
       * authenticator.
       */
      counter: k.big('counter').notNull().default(0),
      /** JSON array of the transports the browser reported (usb, internal, hybrid...). */
      transports: k.text('transports').notNull().default('[]'),
      name: k.text('name').notNull(),
      createdAt: createdAt(k),
      lastUsedAt: k.time('last_used_at'),
    },
    (t) => [k.index('passkeys_user').on(t.userId)],
  )

  /** An account's TOTP second factor (owned by the auth feature): a row while being set up, enabled once confirmed. */
  const totpSecrets = k.table('totp_secrets', {
    userId: k
      .int('user_id')
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The shared secret (base32), sealed with AES-256-GCM under the TOTP key (src/lib/secrets.ts). */
    secret: k.text('secret').notNull(),
    /** Null while being set up: login asks for a code only once it is enabled. */
    enabledAt: k.time('enabled_at'),
    /**
     * The time step of the last accepted code: a code of that step or an earlier one is refused (no replay). A
     * 30-second step since 1970: about 5.9e7 today, 2^31 in the year 4010.
     */
    lastStep: k.int('last_step'),
    createdAt: createdAt(k),
  })

  /** Single-use recovery codes of an account's TOTP, by SHA-256 (they are random, so a fast hash suffices). */
  const recoveryCodes = k.table(
    'recovery_codes',
    {
      codeHash: k.text('code_hash').primaryKey(),
      userId: ownerId(k, users),
      usedAt: k.time('used_at'),
    },
    (t) => [k.index('recovery_codes_user').on(t.userId)],
  )

  /** Accounts signed in through OIDC single sign-on: the provider's subject, per issuer, to the account. */
  const oidcIdentities = k.table(
    'oidc_identities',
    {
      issuer: k.text('issuer').notNull(),
      subject: k.text('subject').notNull(),
      userId: ownerId(k, users),
      createdAt: createdAt(k),
    },
    (t) => [k.primaryKey({ columns: [t.issuer, t.subject] }), k.index('oidc_identities_user').on(t.userId)],
  )

  /**
   * Sign-ins and ceremonies in progress (passkey challenges, OIDC flows): what the answer to a challenge or a
   * provider's redirect must find again, whichever instance it reaches. Single use: taking one deletes it.
   */
  const authFlows = k.table(
    'auth_flows',
    {
      key: k.text('key').primaryKey(),
      kind: k.text('kind', { enum: ['passkey', 'oidc'] }).notNull(),
      /** What the flow carries, as JSON (its own shape per kind). */
      data: k.text('data').notNull(),
      expiresAt: k.time('expires_at').notNull(),
    },
    (t) => [k.index('auth_flows_expires').on(t.expiresAt)],
  )

  return { passkeys, totpSecrets, recoveryCodes, oidcIdentities, authFlows }
}

function imageTables(k: Kit, users: Users) {
  const embedProfiles = k.table(
    'embed_profiles',
    {
      id: k.id(),
      userId: ownerId(k, users),
      name: k.text('name').notNull(),
      title: k.text('title'),
      description: k.text('description'),
      color: k.text('color'),
      authorName: k.text('author_name'),
      authorUrl: k.text('author_url'),
      siteName: k.text('site_name'),
      createdAt: createdAt(k),
      updatedAt: k.time('updated_at').notNull().default(k.now),
    },
    (t) => [k.index('embed_profiles_user').on(t.userId)],
  )

  const images = k.table(
    'images',
    {
      id: k.text('id').primaryKey(),
      /** Null for anonymous uploads. */
      userId: k.int('user_id').references(() => users.id, { onDelete: 'cascade' }),
      filename: k.text('filename').notNull(),
      mime: k.text('mime').notNull(),
      ext: k.text('ext').notNull(),
      width: k.int('width').notNull(),
      height: k.int('height').notNull(),
      /** Bytes: MAX_FILE_SIZE has no upper bound. */
      size: k.big('size').notNull(),
      sha256: k.text('sha256').notNull(),
      /**
       * 64-bit perceptual hash, 16 hex digits (src/media/phash.ts); null for a picture too plain to hash, or older
       * rows.
       */
      phash: k.text('phash'),
      /**
       * The perceptual hash was computed (at upload, or by the backfill of rows stored before 0008:
       * src/modules/images/phash-backfill.ts), so a null `phash` (too plain) is not tried again. A flag of its own, so
       * `phash` keeps meaning "the hash, or none" for the blocklist.
       */
      phashTried: k.flag('phash_tried').notNull().default(false),
      visibility: k
        .text('visibility', { enum: ['public', 'private'] })
        .notNull()
        .default('public'),
      nsfw: k.flag('nsfw').notNull().default(false),
      /** 'pending' while an automatic scan has not given a verdict; such images stay out of public feeds. */
      scanStatus: k
        .text('scan_status', { enum: ['none', 'pending', 'done'] })
        .notNull()
        .default('none'),
      /** A counter fed by every view: no bound but time. */
      views: k.big('views').notNull().default(0),
      /** SHA-256 of the upload's delete token (the anonymous `deleteToken`, the token of every `deletePage` link). */
      deleteTokenHash: k.text('delete_token_hash'),
      embedProfileId: k.int('embed_profile_id').references(() => embedProfiles.id, { onDelete: 'set null' }),
      uploaderIp: k.text('uploader_ip'),
      createdAt: createdAt(k),
      expiresAt: k.time('expires_at'),
      /**
       * What making sizes of it costs, read from its header at upload (src/media/work.ts): the frames of an animation
       * (1 for a still picture), and an SVG's filter passes. Rows stored before migration 0017 (PostgreSQL 0009) have
       * 1 and 0: their sizes are decided by the media worker instead, which reads the file.
       */
      frames: k.int('frames').notNull().default(1),
      filterPasses: k.int('filter_passes').notNull().default(0),
    },
    (t) => [
      // An owner's list newest (or oldest) first. Ties within one millisecond keep their insertion order: SQLite ends
      // every index with the rowid; PostgreSQL sorts each tie by seq (an incremental sort: migrations-pg/0002).
      k.index('images_user_created').on(t.userId, t.createdAt),
      k.index('images_user_size').on(t.userId, t.size),
      k.index('images_user_views').on(t.userId, t.views),
      // The gallery (and search) newest first: only the images it may show (listedImage), so no step skips others.
      k.index('images_listed').on(t.createdAt).where(k.listedImage),
      k.index('images_pending').on(t.scanStatus),
      k.index('images_sha256').on(t.sha256),
      // duplicateOf: an account's own images with the same perceptual hash.
      k.index('images_user_phash').on(t.userId, t.phash),
      // The backfill's lookup, by id: only rows still to hash (rows stored before 0008), so it stays empty after it.
      k
        .index('images_phash_todo')
        .on(t.id)
        .where(sql`phash IS NULL AND ${k.isUnset('phash_tried')}`),
      // The expiry sweeper's lookup; most images never expire, so only those that do are indexed.
      k.index('images_expires').on(t.expiresAt).where(sql`expires_at IS NOT NULL`),
      // An owner's expired images not swept yet, which the counts still hold (image_counts).
      k.index('images_user_expires').on(t.userId, t.expiresAt).where(sql`expires_at IS NOT NULL`),
    ],
  )

  /**
   * How many images each owner holds, per day of upload (UTC days since the epoch, `created_at / 86400000`): kept by
   * triggers in the transaction of every write of images (migrations/0014_image_counts.sql,
   * migrations-pg/0006_image_counts.sql), so no read counts rows. `owner_id` is the user's id, 0 for anonymous uploads,
   * -1 for every image (EVERYONE). Counts include expired images not yet swept (reads take those off, found through
   * images_expires) and banned owners' images (the gallery takes those off, found through users_banned). Per day, so a
   * deep page is found by summing days, not by walking rows.
   */
  const imageCounts = k.table(
    'image_counts',
    {
      ownerId: k.int('owner_id').notNull(),
      day: k.int('day').notNull(),
      images: k.int('images').notNull().default(0),
      bytes: k.big('bytes').notNull().default(0),
      /** Public ones (the rest are private). */
      public: k.int('public').notNull().default(0),
      nsfw: k.int('nsfw').notNull().default(0),
      publicNsfw: k.int('public_nsfw').notNull().default(0),
      /** Public and not waiting for a scan: what a profile shows. */
      shown: k.int('shown').notNull().default(0),
      /** What the gallery shows (listedImage), before bans. */
      listed: k.int('listed').notNull().default(0),
    },
    (t) => [k.primaryKey({ columns: [t.ownerId, t.day] })],
  )

  return { embedProfiles, images, imageCounts }
}

function albumTables(k: Kit, users: Users, images: Images) {
  const albums = k.table(
    'albums',
    {
      id: k.text('id').primaryKey(),
      userId: ownerId(k, users),
      title: k.text('title').notNull(),
      description: k.text('description').notNull().default(''),
      isPublic: k.flag('is_public').notNull().default(false),
      passwordHash: k.text('password_hash'),
      createdAt: createdAt(k),
      updatedAt: k.time('updated_at').notNull().default(k.now),
      deletedAt: k.time('deleted_at'),
      /**
       * How many images the album holds, and how many of them are public: kept by triggers on album_images and images
       * (migrations/0016_album_counts.sql), expired ones not swept yet included (reads take those off).
       */
      imageCount: k.int('image_count').notNull().default(0),
      publicCount: k.int('public_count').notNull().default(0),
    },
    (t) => [k.index('albums_user').on(t.userId, t.deletedAt)],
  )

  const albumImages = k.table(
    'album_images',
    {
      albumId: k
        .text('album_id')
        .notNull()
        .references(() => albums.id, { onDelete: 'cascade' }),
      imageId: k
        .text('image_id')
        .notNull()
        .references(() => images.id, { onDelete: 'cascade' }),
      addedAt: k.time('added_at').notNull().default(k.now),
    },
    (t) => [
      k.primaryKey({ columns: [t.albumId, t.imageId] }),
      k.index('album_images_image').on(t.imageId),
      // An album's images, the most recently added first (its page, its cover).
      k.index('album_images_added').on(t.albumId, t.addedAt),
    ],
  )

  return { albums, albumImages }
}

function uploadTables(k: Kit, users: Users) {
  /**
   * Fixed upload windows (per account `user:<id>` or per anonymous IP `ip:<addr>`), persisted so restarts keep them.
   */
  const uploadWindows = k.table('upload_windows', {
    key: k.text('key').primaryKey(),
    windowStart: k.time('window_start').notNull(),
    /** Uploads (files) counted in the window, bounded by the configured per-window limits. */
    used: k.int('used').notNull(),
  })

  /**
   * Resumable (tus 1.0) uploads in progress, and for a while their outcome. The bytes are in `DATA_DIR/tus/<id>`;
   * a finished upload goes through the upload pipeline and keeps only its answer here, until `expiresAt`.
   */
  const tusUploads = k.table(
    'tus_uploads',
    {
      /** Random, unguessable: the upload URL is the only capability an anonymous uploader holds. */
      id: k.text('id').primaryKey(),
      /** Null for anonymous web uploads. */
      userId: k.int('user_id').references(() => users.id, { onDelete: 'cascade' }),
      /** Which endpoint made it: `api` (/api/v1/tus, API key) or `web` (/api/tus, JWT or anonymous). */
      endpoint: k.text('endpoint', { enum: ['api', 'web'] }).notNull(),
      ip: k.text('ip').notNull(),
      /** Bytes of one upload (Upload-Length), bounded by MAX_FILE_SIZE, which has no upper bound. */
      length: k.big('length').notNull(),
      offset: k.big('offset').notNull().default(0),
      /** The Upload-Metadata header as the client sent it (echoed by HEAD). */
      metadata: k.text('metadata').notNull().default(''),
      createdAt: createdAt(k),
      expiresAt: k.time('expires_at').notNull(),
      finishedAt: k.time('finished_at'),
      /** The pipeline's answer once finished: its status and JSON body (success or error). */
      resultStatus: k.int('result_status'),
      result: k.text('result'),
      /**
       * Until when a request holds the upload (writing to it or finishing it): one at a time, across instances. Null,
       * or past: free. Renewed while the request runs, so a crashed instance's claim runs out.
       */
      claimedUntil: k.time('claimed_until'),
    },
    (t) => [
      k.index('tus_uploads_user').on(t.userId),
      k.index('tus_uploads_ip').on(t.ip),
      k.index('tus_uploads_expires').on(t.expiresAt),
    ],
  )

  /**
   * Images an upload is storing (their original and thumbnail), recorded before the first byte is stored and deleted
   * in the transaction that inserts their rows: what is left here belongs to an upload that never committed (a crash,
   * a kill -9), and its files go at the next start (src/modules/images/upload/intents.ts).
   */
  const uploadIntents = k.table(
    'upload_intents',
    {
      /** The image id the upload stores under (its keys: `originals/<id>.<ext>`, `thumbs/<id>.webp`). */
      id: k.text('id').primaryKey(),
      ext: k.text('ext').notNull(),
      /** The data directory's instance id (DATA_DIR/instance-id): a restart sweeps its own earlier life's intents. */
      instance: k.text('instance').notNull(),
      createdAt: createdAt(k),
    },
    (t) => [k.index('upload_intents_created').on(t.createdAt)],
  )

  return { uploadWindows, tusUploads, uploadIntents }
}

function moderationTables(k: Kit, users: Users) {
  /** Abuse reports about images; kept after the image is gone, as the record of what was decided. */
  const reports = k.table(
    'reports',
    {
      id: k.id(),
      /** Not a foreign key: the report outlives the image it is about. */
      imageId: k.text('image_id').notNull(),
      /**
       * The reported image's owner and uploaded bytes at report time, so an action still works once the image
       * is gone.
       */
      imageOwnerId: k.int('image_owner_id').references(() => users.id, { onDelete: 'set null' }),
      imageSha256: k.text('image_sha256').notNull(),
      imagePhash: k.text('image_phash'),
      reason: k.text('reason', { enum: ['illegal', 'nsfw', 'copyright', 'spam', 'other'] }).notNull(),
      details: k.text('details'),
      reporterIp: k.text('reporter_ip').notNull(),
      status: k
        .text('status', { enum: ['open', 'dismissed', 'actioned'] })
        .notNull()
        .default('open'),
      createdAt: createdAt(k),
      resolvedAt: k.time('resolved_at'),
      resolvedBy: k.int('resolved_by').references(() => users.id, { onDelete: 'set null' }),
    },
    (t) => [
      k.index('reports_status_created').on(t.status, t.createdAt),
      k.index('reports_image').on(t.imageId, t.status),
    ],
  )

  /**
   * Blocked pictures (src/modules/blocks): an upload within BLOCK_HAMMING_DISTANCE of `phash`, or carrying bytes of one
   * of its `block_sha256s`, is refused. Made by a report action, an admin's block of an image, or the CLI.
   */
  const blocks = k.table(
    'blocks',
    {
      id: k.id(),
      /** 16 hex digits; null when the picture had none (too plain to hash): then its bytes alone are blocked. */
      phash: k.text('phash'),
      reason: k.text('reason').notNull(),
      source: k.text('source', { enum: ['report', 'admin', 'cli', 'import'] }).notNull(),
      /** The removed image and the report acted on, when there were; not foreign keys, the block outlives them. */
      imageId: k.text('image_id'),
      reportId: k.int('report_id'),
      /** The removed image's WebP thumbnail, kept only when the operator asked for it. */
      thumbnail: k.bytes('thumbnail'),
      createdAt: createdAt(k),
    },
    (t) => [k.index('blocks_created').on(t.createdAt)],
  )

  /** SHA-256 of blocked bytes (as uploaded and as stored), each of one block. */
  const blockSha256s = k.table(
    'block_sha256s',
    {
      sha256: k.text('sha256').primaryKey(),
      blockId: k
        .int('block_id')
        .notNull()
        .references(() => blocks.id, { onDelete: 'cascade' }),
    },
    (t) => [k.index('block_sha256s_block').on(t.blockId)],
  )

  return { reports, blocks, blockSha256s }
}

function serviceTables(k: Kit, users: Users, images: Images) {
  /** Per-account HTTP endpoints notified of image events (at most 5 per account). */
  const webhooks = k.table(
    'webhooks',
    {
      id: k.id(),
      userId: ownerId(k, users),
      url: k.text('url').notNull(),
      /** Signing key of the HMAC-SHA256 signatures; kept in clear since every delivery needs it. */
      secret: k.text('secret').notNull(),
      /** JSON array of event names. */
      events: k.text('events').notNull(),
      createdAt: createdAt(k),
      lastDeliveryAt: k.time('last_delivery_at'),
      /** HTTP status of the last attempt; null before any, 0 when no answer came (network error, refused address). */
      lastStatus: k.int('last_status'),
      lastError: k.text('last_error'),
    },
    (t) => [k.index('webhooks_user').on(t.userId)],
  )

  /**
   * Stored variants of images (src/modules/variants): presets and signed sizes made on first request, counted against
   * VARIANT_STORAGE_LIMIT and evicted least recently used first. No foreign key: an image's removal deletes its
   * variants' files first (the rows say which), and the orphan sweep drops rows whose image went another way.
   */
  const variants = k.table(
    'variants',
    {
      key: k.text('key').primaryKey(),
      imageId: k.text('image_id').notNull(),
      /** Bytes of one stored variant; its sums against VARIANT_STORAGE_LIMIT are computed by queries. */
      bytes: k.big('bytes').notNull(),
      createdAt: createdAt(k),
      lastUsedAt: k.time('last_used_at').notNull(),
    },
    (t) => [k.index('variants_image').on(t.imageId), k.index('variants_last_used').on(t.lastUsedAt)],
  )

  /**
   * Sizes (presets, signed sizes) whose making failed (undecodable, past a media budget, predicted too costly by the
   * worker), with the reason: every instance answers them at once with it, and never runs the job again. Removed with
   * the image.
   */
  const variantFailures = k.table(
    'variant_failures',
    {
      key: k.text('key').primaryKey(),
      imageId: k
        .text('image_id')
        .notNull()
        .references(() => images.id, { onDelete: 'cascade' }),
      reason: k.text('reason').notNull(),
      createdAt: createdAt(k),
    },
    (t) => [k.index('variant_failures_image').on(t.imageId)],
  )

  /** One row, rewritten by /healthz (at most once a second) to prove the database can still be written. */
  const healthProbe = k.table('health_probe', {
    id: k.int('id').primaryKey(),
    checkedAt: k.time('checked_at').notNull(),
  })

  return { webhooks, variants, variantFailures, healthProbe }
}
