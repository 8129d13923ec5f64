/**
 * The SQLite tables: src/db/tables.ts applied with SQLite's column kit. Times are epoch milliseconds and flags 0/1, in
 * integers (64-bit, so `big` is a plain integer here); bytes are blobs.
 */
import { sql } from 'drizzle-orm'
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { defineTables } from './tables'

/**
 * An image the gallery may show, bans and expiry aside: public, not NSFW, not waiting for a scan. Literal, so the
 * planner can use the partial index images_listed for a query carrying the same condition.
 */
export const listedImage = sql`visibility = 'public' AND nsfw = 0 AND scan_status <> 'pending'`

const kit = {
  table: sqliteTable,
  index,
  uniqueIndex,
  primaryKey,
  /** An autoincrement key. */
  id: () => integer('id').primaryKey({ autoIncrement: true }),
  int: <N extends string>(name: N) => integer(name),
  /** An integer that may pass 2^31, read as a JS number. */
  big: <N extends string>(name: N) => integer(name),
  text,
  flag: <N extends string>(name: N) => integer(name, { mode: 'boolean' }),
  /** A time as epoch milliseconds, a `Date` in JS. */
  time: <N extends string>(name: N) => integer(name, { mode: 'timestamp_ms' }),
  /** Bytes, a Node Buffer in JS. */
  bytes: <N extends string>(name: N) => blob(name, { mode: 'buffer' }),
  /** Now, in epoch milliseconds: the default of times. */
  now: sql`(unixepoch('subsec') * 1000)`,
  /** A flag's test in raw SQL (partial indexes' conditions), set or not. */
  isSet: (flag: string) => sql.raw(`${flag} = 1`),
  isUnset: (flag: string) => sql.raw(`${flag} = 0`),
  listedImage,
}

/** What a column kit gives src/db/tables.ts; PostgreSQL's (schema-pg.ts) gives the same under its own types. */
export type Kit = typeof kit

const tables = defineTables(kit)
export const { users, apiKeys, verificationTokens, sessions, invites } = tables
export const { passkeys, totpSecrets, recoveryCodes, oidcIdentities, authFlows } = tables
export const { embedProfiles, images, imageCounts, albums, albumImages } = tables
export const { uploadWindows, tusUploads, uploadIntents, reports, blocks, blockSha256s } = tables
export const { webhooks, variants, variantFailures, healthProbe } = tables

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
