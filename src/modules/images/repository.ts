import { and, asc, count, desc, eq, gt, inArray, isNotNull, isNull, lte, or, type SQL, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { byEngine, type Db, prepared, q, rawRows, type Step, type Tx } from '../../db/client'
import { dialect, indexedBy } from '../../db/dialect'
import { insertionOrder } from '../../db/order'
import { type EmbedProfile, type Image, images, listedImage } from '../../db/schema'
import { inValues } from '../../db/values'
import { accounts } from '../auth/repository'
import { profiles } from '../embeds/repository'
import { type CountedList, insertedBy, ownedTally } from './counts'
import { expiredImage, liveImage } from './live'
import type { IMAGE_SORTS } from './model'

/**
 * Every query of the images table. Other features call these and never the table; the few queries of theirs that
 * join an image take its columns from here (imageJoin).
 */

export interface ImageListFilter {
  visibility?: Image['visibility']
  nsfw?: boolean
  /** Part of the filename, matched anywhere, case-insensitively (lower() on both sides: ASCII letters on SQLite). */
  name?: string
}

/** An order of an owner's list: by upload date, stored size or views, either way. */
export interface ImageListOrder {
  by: (typeof IMAGE_SORTS)[number]
  direction: 'asc' | 'desc'
}
const sortColumns = { date: images.createdAt, size: images.size, views: images.views }

// The live image with the id `id` at the time `now`: placeholders bound per call, so lookups are prepared once
// (building the query per call cost ~60-90 us, most of a /cdn request's budget: bench/README.md).
const liveById = () => and(eq(images.id, sql.placeholder('id')), liveImage(sql.placeholder('now') as unknown as number))

/** The live image with an id at a time, prepared once: `await findLive({ id, now })`. */
export function prepareFindLive(db: Db) {
  const statement = prepared('find_live', db.select().from(images).where(liveById()))
  return async (values: { id: string; now: number }): Promise<Image | undefined> => (await statement.execute(values))[0]
}

/**
 * What the hot read routes show of a live image, and its rowid, which the cache's invalidation keys on, prepared once:
 * `await findLiveRow({ id, now })`.
 */
export function prepareFindLiveRow(db: Db) {
  const query = db
    .select({
      rowid: insertionOrder(images),
      id: images.id,
      ext: images.ext,
      mime: images.mime,
      size: images.size,
      width: images.width,
      height: images.height,
      views: images.views,
      visibility: images.visibility,
      nsfw: images.nsfw,
      frames: images.frames,
      filterPasses: images.filterPasses,
      // Epoch milliseconds as stored (a bigint, which PostgreSQL's client reads as a string).
      createdAt: sql<number>`${images.createdAt}`.mapWith(Number),
      expiresAt: sql<number | null>`${images.expiresAt}`.mapWith(Number),
    })
    .from(images)
    .where(liveById())
  const statement = prepared('find_live_row', query)
  return async (values: { id: string; now: number }) => (await statement.execute(values))[0]
}

/**
 * A writer of view counts: adds each `[id, n]`'s `n` views to its image, in one transaction, as increments (another
 * instance's counts add up). SQLite: a raw statement prepared once and run per row, synchronously inside the call
 * (the update hook sees these writes before it returns); PostgreSQL: one UPDATE joined to the batch (one round trip).
 */
export function prepareAddViews(db: Db): (batch: [id: string, n: number][]) => Promise<void> {
  return byEngine<(batch: [id: string, n: number][]) => Promise<void>>(db, {
    pg: () => async (batch) => {
      if (batch.length === 0) return
      await rawRows(
        db,
        // The batch as one JSON parameter: one statement, whatever its length.
        sql`UPDATE images SET views = images.views + v.n
            FROM json_to_recordset(${JSON.stringify(batch.map(([id, n]) => ({ id, n })))}::text::json) AS v(id text, n bigint)
            WHERE images.id = v.id`,
      )
    },
    sqlite: ({ $client }) => {
      const add = $client.prepare('UPDATE images SET views = views + ?1 WHERE id = ?2')
      const write = $client.transaction((batch: [string, number][]) => {
        for (const [id, n] of batch) add.run(n, id)
      })
      return async (batch) => write(batch)
    },
  })
}

/** Any row with this id, live or expired-but-not-yet-swept. */
export function* anyImage(db: Db | Tx, id: string): Step<Image | undefined> {
  return (yield* q(db.select().from(images).where(eq(images.id, id))))[0]
}

export function* insertImages(tx: Tx, rows: (typeof images.$inferInsert)[]): Step<Image[]> {
  return yield* q(tx.insert(images).values(rows).returning())
}

/** The image as changed; undefined when it is gone (deleted or swept since it was looked up). */
export function* updateImage(db: Db | Tx, id: string, set: Partial<Image>): Step<Image | undefined> {
  return (yield* q(db.update(images).set(set).where(eq(images.id, id)).returning()))[0]
}

export function* deleteImage(tx: Tx, id: string): Step<Image | undefined> {
  return (yield* q(tx.delete(images).where(eq(images.id, id)).returning()))[0]
}

/** Deletes the rows of `ids` (the counters follow by trigger, as for one); returns those that were there. */
export function* deleteImages(tx: Tx, ids: string[]): Step<Image[]> {
  return yield* q(tx.delete(images).where(inArray(images.id, ids)).returning())
}

/**
 * What other features' queries join of images (a report's image, an album's images, the gallery's feeds): the table
 * and the columns they name. They take these from here, never the schema.
 */
export const imageJoin = {
  table: images,
  id: images.id,
  ext: images.ext,
  userId: images.userId,
  visibility: images.visibility,
  scanStatus: images.scanStatus,
  createdAt: images.createdAt,
  /** Public, not NSFW, scanned or exempt from scanning: a literal, so the partial index images_listed serves it. */
  listed: listedImage,
  /** The image while live, by id (`imageId`: the joining table's column). */
  onLive: (imageId: SQLiteColumn) => and(eq(images.id, imageId), liveImage()),
}

/** The row of the image whose id is in `imageId` (another table's column): what a NOT EXISTS of a gone image asks. */
export const imageWithId = (db: Db, imageId: SQLiteColumn) =>
  db.select({ id: images.id }).from(images).where(eq(images.id, imageId))

/** Which of `ids` are live images of the user. */
export function* ownedLiveIds(db: Db | Tx, userId: number, ids: string[]): Step<string[]> {
  return (yield* q(
    db
      .select({ id: images.id })
      .from(images)
      .where(and(inArray(images.id, ids), eq(images.userId, userId), liveImage())),
  )).map((r) => r.id)
}

/** The id of a live image of the user whose bytes as sent had this SHA-256 (the folder import's "already there"). */
export function* ownedImageWithHash(db: Db | Tx, userId: number, sha256: string): Step<string | undefined> {
  return (yield* q(
    db
      .select({ id: images.id })
      .from(images)
      .where(and(eq(images.sha256, sha256), eq(images.userId, userId), liveImage())),
  ))[0]?.id
}

/**
 * The id of a live image of the user with this perceptual hash (an upload's `duplicateOf`), the oldest first, prepared
 * once (every upload of an account asks): `await findOwnedPhash({ userId, phash, now })`.
 */
export function prepareOwnedImageWithPhash(db: Db) {
  const statement = prepared(
    'owned_image_with_phash',
    db
      .select({ id: images.id })
      .from(images)
      .where(
        and(
          eq(images.userId, sql.placeholder('userId')),
          eq(images.phash, sql.placeholder('phash')),
          liveImage(sql.placeholder('now') as unknown as number),
        ),
      )
      // Through images_user_phash, its few matches sorted: in images_user_created's order the planner would walk every
      // image of the owner to find the first one with the hash (the unary plus keeps that index out of the order).
      .orderBy(sql`+${images.createdAt}`)
      .limit(1),
  )
  return async (values: { userId: number; phash: string; now: number }): Promise<string | undefined> =>
    (await statement.execute(values))[0]?.id
}

/** Sets the embed profile (null: the default embed) of these images. */
export function* setEmbedProfile(db: Db | Tx, ids: string[], embedProfileId: number | null) {
  return yield* q(db.update(images).set({ embedProfileId }).where(inArray(images.id, ids)))
}

/**
 * A live image at `now` with its owner's name and ban and its embed profile, in one query: everything a viewer page
 * or an oEmbed answer needs.
 */
export const imagePageRow = async (
  db: Db,
  id: string,
  now: number,
): Promise<
  { image: Image; username: string | null; banned: boolean | null; profile: EmbedProfile | null } | undefined
> =>
  (
    await db
      .select({ image: images, username: accounts.username, banned: accounts.banned, profile: profiles.table })
      .from(images)
      .leftJoin(accounts.table, eq(accounts.id, images.userId))
      .leftJoin(profiles.table, eq(profiles.id, images.embedProfileId))
      .where(and(eq(images.id, id), liveImage(now)))
  )[0]

/** Original filenames, and what their sizes cost (src/media/work.ts), by image id. */
export async function tileFactsOf(db: Db, ids: string[]) {
  const rows = await db
    .select({ id: images.id, filename: images.filename, frames: images.frames, filterPasses: images.filterPasses })
    .from(images)
    .where(inArray(images.id, ids))
  return new Map(rows.map(({ id, ...facts }) => [id, facts]))
}

/** Images expired by `at`, the earliest first, at most `limit`. */
export function dueToExpire(db: Db, at: number, limit: number) {
  return db
    .select({ id: images.id, ext: images.ext })
    .from(images)
    .where(and(isNotNull(images.expiresAt), lte(images.expiresAt, new Date(at))))
    .orderBy(asc(images.expiresAt))
    .limit(limit)
    .then((rows) => rows)
}

/**
 * Up to `limit` rows' ids and extensions after `afterId`, by id (through the primary key): every row, a batch at a
 * time, for what walks them all (`cli check`, backups).
 */
export const imagesAfter = async (db: Db, afterId: string, limit: number) =>
  await db
    .select({ id: images.id, ext: images.ext })
    .from(images)
    .where(gt(images.id, afterId))
    .orderBy(asc(images.id))
    .limit(limit)

/**
 * Up to `limit` of the owner's rows after `after` (its upload time and id), oldest first, expired ones not swept yet
 * included (through images_user_created): every image of an account, a batch at a time (its export, its deletion).
 */
export const ownedImagesAfter = async (
  db: Db,
  userId: number,
  after: { createdAt: Date; id: string } | null,
  limit: number,
): Promise<Image[]> =>
  await db
    .select()
    .from(images)
    .where(
      and(
        eq(images.userId, userId),
        after
          ? or(
              gt(images.createdAt, after.createdAt),
              and(eq(images.createdAt, after.createdAt), gt(images.id, after.id)),
            )
          : undefined,
      ),
    )
    .orderBy(asc(images.createdAt), asc(images.id))
    .limit(limit)

/** The ids and extensions of the rows among `ids` (the orphan sweep's question about a batch of stored files). */
export const imagesAmong = async (db: Db, ids: string[]) =>
  ids.length === 0
    ? []
    : await db
        .select({ id: images.id, ext: images.ext })
        .from(images)
        .where(inValues(images.id, ids))
        .then((rows) => rows)

/** Pending scans a rescan pass takes at most: the oldest, so a long backlog is worked through a pass at a time. */
const PENDING_BATCH = 500

/** Live images whose upload-time scan gave no verdict, the oldest `limit` (through images_pending). */
export function pendingScans(db: Db, limit = PENDING_BATCH) {
  return db
    .select({ id: images.id, ext: images.ext })
    .from(images)
    .where(and(eq(images.scanStatus, 'pending'), liveImage()))
    .orderBy(asc(images.createdAt))
    .limit(limit)
    .then((rows) => rows)
}

/**
 * Up to `limit` live images with no perceptual hash that were never tried (rows stored before migration 0008), by id
 * after `afterId` (a cursor: a run passes each row once, even one whose original cannot be read).
 */
export const phashTodo = async (db: Db, limit: number, afterId: string) =>
  await db
    .select({ id: images.id, ext: images.ext })
    .from(images)
    .where(and(isNull(images.phash), eq(images.phashTried, false), gt(images.id, afterId), liveImage()))
    .orderBy(asc(images.id))
    .limit(limit)

/** Stores what the backfill got for an image: its hash, or null (too plain), and that it was tried. */
export async function recordPhash(db: Db, id: string, phash: string | null) {
  await db
    .update(images)
    .set({ phash, phashTried: true })
    .where(and(eq(images.id, id), isNull(images.phash)))
}

/** Only a still-pending row changes; a user's own NSFW flag is never cleared. */
export async function recordScan(db: Db, id: string, mature: boolean) {
  await db
    .update(images)
    .set(mature ? { nsfw: true, scanStatus: 'done' } : { scanStatus: 'done' })
    .where(and(eq(images.id, id), eq(images.scanStatus, 'pending')))
}

/**
 * An owner's images narrowed by `filter`, expiry aside. `byRowid`: the rows are picked by rowid (a name filter's few
 * matches); the owner is then tested on each row (unary +), as SQLite would rather walk the owner's index and test
 * every row against the matches.
 */
const ownedWhere = (userId: number, filter: ImageListFilter = {}, byRowid = false) =>
  and(
    byRowid ? sql`+${images.userId} = ${userId}` : eq(images.userId, userId),
    filter.visibility ? eq(images.visibility, filter.visibility) : undefined,
    filter.nsfw === undefined ? undefined : eq(images.nsfw, filter.nsfw),
    // The text is a literal: LIKE's wildcards and the escape character in it are escaped.
    filter.name
      ? sql`lower(${images.filename}) LIKE lower(${`%${filter.name.replace(/[\\%_]/g, '\\$&')}%`}) ESCAPE '\\'`
      : undefined,
  )!

/** An owner's list narrowed by visibility and NSFW flag: counted (image_counts). */
export const ownedList = (userId: number, filter: ImageListFilter): CountedList => ({
  owner: userId,
  tally: ownedTally(filter),
  where: ownedWhere(userId, filter),
})

/**
 * Whether the name filter goes through a trigram index, for a name of 3 characters or more (it finds nothing
 * shorter; the owner's rows are walked then): SQLite's image_names (migrations/0018_image_names.sql), PostgreSQL's
 * images_name_keys (migrations-pg/0013_image_name_keys.sql).
 */
const namesIndexed = (filter: ImageListFilter): boolean => [...(filter.name ?? '')].length >= 3

/** PostgreSQL: the images whose keys hold every key of the name for the owner (a superset of the matches). */
const keyedName = (userId: number, name: string) =>
  sql`image_name_keys(${images.userId}, ${images.filename}) @> image_name_keys(${userId}::integer, ${name}::text)`

/**
 * image_names' query for an owner's list: the owner's word, the list's visibility and NSFW words, and the name,
 * lower-cased as SQLite's lower() does (ASCII letters), as one phrase (a phrase of trigrams is a substring match).
 */
function namesQuery(userId: number, filter: ImageListFilter): string {
  const phrase = (text: string) => `"${text.replaceAll('"', '""')}"`
  const words = [phrase(`\x01${userId}\x01`)]
  if (filter.visibility) words.push(phrase(`\x02${filter.visibility}\x02`))
  if (filter.nsfw !== undefined) words.push(phrase(`\x03${filter.nsfw ? 1 : 0}\x03`))
  words.push(phrase(filter.name!.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())))
  return words.join(' AND ')
}

/** Counts the rows `from` picks, stopping past `cap` (a count that never walks more than the cap's rows). */
const countUpTo = (db: Db | Tx, from: SQL, cap: number) =>
  q(db.select({ n: count() }).from(sql`(SELECT 1 FROM ${from} LIMIT ${cap + 1}) AS up_to`))

/**
 * How many live images (as of insertion `asOf`) the user owns whose filename contains `filter.name`, up to
 * `scope` (NAME_SCOPE; `capped`: more matched), and, when they are not capped, the condition that picks them (ownedPage then
 * looks them up instead of walking the owner's rows). On SQLite through image_names: its count of the owner's matches,
 * less those expired and not swept yet (images_user_expires: few); else the matching rows counted.
 */
export function* countNamed(
  db: Db | Tx,
  userId: number,
  now: number,
  filter: ImageListFilter,
  asOf: number,
  scope: number,
): Step<{ total: number; capped: boolean; among?: SQL }> {
  if (dialect({ sqlite: namesIndexed(filter), pg: false })) {
    const match = namesQuery(userId, filter)
    const [expired] = yield* q(
      db
        .select({ n: count() })
        .from(indexedBy(images, 'images_user_expires'))
        .where(and(ownedWhere(userId, filter), expiredImage(now), insertedBy(asOf))),
    )
    const unswept = expired?.n ?? 0
    const [indexed] = yield* countUpTo(
      db,
      sql`image_names WHERE image_names MATCH ${match} AND rowid <= ${asOf}`,
      scope + unswept,
    )
    const live = (indexed?.n ?? 0) - unswept
    return live > scope
      ? { total: scope, capped: true }
      : {
          total: live,
          capped: false,
          among: sql`${images}.rowid IN (SELECT rowid FROM image_names WHERE image_names MATCH ${match})`,
        }
  }
  // PostgreSQL's keys pick the candidates of a name of 3 characters or more. Else the owner's rows in upload order,
  // which is the table's order too: SQLite would as soon walk them by size or views, reading the table in random
  // order (five times slower at 500,000 rows).
  const among = namesIndexed(filter) ? keyedName(userId, filter.name!) : undefined
  const table = indexedBy(images, 'images_user_created')
  const [counted] = yield* countUpTo(
    db,
    sql`${table} WHERE ${and(among, ownedWhere(userId, filter), liveImage(now), insertedBy(asOf))}`,
    scope,
  )
  const n = counted?.n ?? 0
  // Past the cap a page walks the owner's newest rows (the matches are many, so they come soon), as it does for a
  // short name.
  return n > scope ? { total: scope, capped: true } : { total: n, capped: false, among }
}

/**
 * One page of the user's live images (narrowed by `filter`) as of insertion `asOf`, by an order other than the
 * counted date order (size, views) or with a name filter: walked by offset through images_user_size / _views, or,
 * with `among` (a name filter's few matches, countNamed), those looked up and sorted.
 */
export function* ownedPage(
  db: Db | Tx,
  userId: number,
  now: number,
  filter: ImageListFilter,
  page: { limit: number; offset: number; asOf: number },
  order: ImageListOrder,
  among?: SQL,
): Step<Image[]> {
  const direction = order.direction === 'asc' ? asc : desc
  return yield* q(
    db
      .select()
      .from(images)
      .where(and(among, ownedWhere(userId, filter, !!among), liveImage(now), insertedBy(page.asOf)))
      // Ties (same size, same views) keep the upload order, so pages never overlap.
      .orderBy(direction(sortColumns[order.by]), direction(insertionOrder(images)))
      .limit(page.limit)
      .offset(page.offset),
  )
}
