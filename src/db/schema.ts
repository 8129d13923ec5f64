import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

const createdAt = () =>
  integer('created_at', { mode: 'timestamp_ms' })
    .notNull()
    .default(sql`(unixepoch('subsec') * 1000)`)

export const users = sqliteTable(
  'users',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    username: text('username').notNull(),
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    role: text('role', { enum: ['user', 'admin'] }).notNull().default('user'),
    emailVerified: integer('email_verified', { mode: 'boolean' }).notNull().default(false),
    privateAccount: integer('private_account', { mode: 'boolean' }).notNull().default(false),
    banned: integer('banned', { mode: 'boolean' }).notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    // Uniqueness is case-insensitive, as DECISIONS.md requires.
    uniqueIndex('users_username_lower').on(sql`lower(${t.username})`),
    uniqueIndex('users_email_lower').on(sql`lower(${t.email})`),
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

export const verificationTokens = sqliteTable('verification_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  usedAt: integer('used_at', { mode: 'timestamp_ms' }),
})

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
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' })
      .notNull()
      .default(sql`(unixepoch('subsec') * 1000)`),
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
    visibility: text('visibility', { enum: ['public', 'private'] }).notNull().default('public'),
    nsfw: integer('nsfw', { mode: 'boolean' }).notNull().default(false),
    /** 'pending' while an automatic scan has not given a verdict; such images stay out of public feeds. */
    scanStatus: text('scan_status', { enum: ['none', 'pending', 'done'] }).notNull().default('none'),
    views: integer('views').notNull().default(0),
    /** SHA-256 of the anonymous uploader's delete token. */
    deleteTokenHash: text('delete_token_hash'),
    embedProfileId: integer('embed_profile_id').references(() => embedProfiles.id, { onDelete: 'set null' }),
    uploaderIp: text('uploader_ip'),
    createdAt: createdAt(),
    expiresAt: integer('expires_at', { mode: 'timestamp_ms' }),
  },
  (t) => [
    index('images_user_created').on(t.userId, t.createdAt),
    index('images_feed').on(t.visibility, t.nsfw, t.scanStatus, t.createdAt),
    index('images_pending').on(t.scanStatus),
    index('images_sha256').on(t.sha256),
  ],
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
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' })
      .notNull()
      .default(sql`(unixepoch('subsec') * 1000)`),
    deletedAt: integer('deleted_at', { mode: 'timestamp_ms' }),
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
    addedAt: integer('added_at', { mode: 'timestamp_ms' })
      .notNull()
      .default(sql`(unixepoch('subsec') * 1000)`),
  },
  (t) => [primaryKey({ columns: [t.albumId, t.imageId] }), index('album_images_image').on(t.imageId)],
)

/** Fixed upload windows (per account `user:<id>` or per anonymous IP `ip:<addr>`), persisted so restarts keep them. */
export const uploadWindows = sqliteTable('upload_windows', {
  key: text('key').primaryKey(),
  windowStart: integer('window_start', { mode: 'timestamp_ms' }).notNull(),
  used: integer('used').notNull(),
})

export type User = typeof users.$inferSelect
export type ApiKey = typeof apiKeys.$inferSelect
export type Image = typeof images.$inferSelect
export type Album = typeof albums.$inferSelect
export type EmbedProfile = typeof embedProfiles.$inferSelect
