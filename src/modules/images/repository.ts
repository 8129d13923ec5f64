import { and, asc, count, desc, eq, gt, inArray, isNotNull, isNull, lte, or, type SQL, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { type Db, prepared, q, rawRows, type Step, type Tx } from '../../db/client'
import { engine } from '../../db/engine'
import { insertionOrder } from '../../db/order'
import { type EmbedProfile, type Image, images, uploadWindows } from '../../db/schema'
import { iso } from '../../lib/time'
import { membership } from '../albums/repository'
import { accounts } from '../auth/repository'
import { profiles } from '../embeds/repository'
import { imageLinks, type LinkBase } from './links'
import { liveImage } from './live'
import type { IMAGE_SORTS } from './model'
import { pgSearchMatch } from './search-pg'

/**
 * Every query of the images table (and of the upload windows, which images owns). Other features call these and never
 * the table; the few queries of theirs that join an image take its columns from here.
 */

/** What a response may show of an image: a row, or a cached live image (which carries no filename). */
type ShownImage = Pick<Image, 'id' | 'ext' | 'mime' | 'size' | 'width' | 'height' | 'views' | 'visibility' | 'nsfw'> & {
  filename?: string
  createdAt: Date | number
  expiresAt: Date | number | null
}

/**
 * An image under every name the API's image shapes give its fields (INTERFACE.md), mapped once: each response picks
 * its own with pickImage. `views` is the count to show (with views still buffered in memory, where the answer has them).
 */
export function imageFields<I extends ShownImage>(base: LinkBase, image: I, views = image.views) {
  const uploaded = iso(image.createdAt)
  return {
    id: image.id,
    ...imageLinks(base, image),
    filename: image.filename as I['filename'],
    width: image.width,
    height: image.height,
    size: image.size,
    mime: image.mime,
    views,
    visibility: image.visibility,
    nsfw: image.nsfw,
    created_at: uploaded,
    createdAt: uploaded,
    uploadedAt: uploaded,
    /** ISO 8601, or null when it never expires. */
    expiresAt: image.expiresAt === null ? null : iso(image.expiresAt),
  }
}

/** The fields `keys` of an image, in that order. */
export function pickImage<F extends object, K extends keyof F>(fields: F, keys: readonly K[]) {
  const picked = {} as Pick<F, K>
  for (const key of keys) picked[key] = fields[key]
  return picked
}

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
  if (engine === 'pg')
    return async (batch) => {
      if (batch.length === 0) return
      await rawRows(
        db,
        // The batch as one JSON parameter: one statement, whatever its length.
        sql`UPDATE images SET views = images.views + v.n
            FROM json_to_recordset(${JSON.stringify(batch.map(([id, n]) => ({ id, n })))}::text::json) AS v(id text, n bigint)
            WHERE images.id = v.id`,
      )
    }
  const add = db.$client.prepare('UPDATE images SET views = views + ?1 WHERE id = ?2')
  const write = db.$client.transaction((batch: [string, number][]) => {
    for (const [id, n] of batch) add.run(n, id)
  })
  return async (batch) => write(batch)
}

/** Any row with this id, live or expired-but-not-yet-swept. */
export function* anyImage(db: Db | Tx, id: string): Step<Image | undefined> {
  return (yield* q(db.select().from(images).where(eq(images.id, id))))[0]
}

export function* insertImages(tx: Tx, rows: (typeof images.$inferInsert)[]): Step<Image[]> {
  return yield* q(tx.insert(images).values(rows).returning())
}

export function* updateImage(db: Db | Tx, id: string, set: Partial<Image>): Step<Image> {
  return (yield* q(db.update(images).set(set).where(eq(images.id, id)).returning()))[0]!
}

export function* deleteImage(tx: Tx, id: string): Step<Image | undefined> {
  return (yield* q(tx.delete(images).where(eq(images.id, id)).returning()))[0]
}

/** What the reports repository joins of an image: the image while live, by id, and its owner's id. */
export const liveImageJoin = {
  table: images,
  userId: images.userId,
  on: (imageId: SQLiteColumn) => and(eq(images.id, imageId), liveImage()),
}

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

/** The id of a live image of the user with this perceptual hash (an upload's `duplicateOf`), the oldest first. */
export function* ownedImageWithPhash(db: Db | Tx, userId: number, phash: string): Step<string | undefined> {
  return (yield* q(
    db
      .select({ id: images.id })
      .from(images)
      .where(and(eq(images.userId, userId), eq(images.phash, phash), liveImage()))
      .orderBy(images.createdAt),
  ))[0]?.id
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

/** Every row's id and extension: what the files of the store should be. */
export const storedImages = async (db: Db) => await db.select({ id: images.id, ext: images.ext }).from(images)

/** Live images whose upload-time scan gave no verdict, oldest first. */
export function pendingScans(db: Db) {
  return db
    .select({ id: images.id, ext: images.ext })
    .from(images)
    .where(and(eq(images.scanStatus, 'pending'), liveImage()))
    .orderBy(asc(images.createdAt))
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

const ownedWhere = (userId: number, now: number, filter: ImageListFilter = {}) =>
  and(
    eq(images.userId, userId),
    liveImage(now),
    filter.visibility ? eq(images.visibility, filter.visibility) : undefined,
    filter.nsfw === undefined ? undefined : eq(images.nsfw, filter.nsfw),
    // The text is a literal: LIKE's wildcards and the escape character in it are escaped.
    filter.name
      ? sql`lower(${images.filename}) LIKE lower(${`%${filter.name.replace(/[\\%_]/g, '\\$&')}%`}) ESCAPE '\\'`
      : undefined,
  )

/** How many live images the user owns (narrowed by `filter`). */
export function* countOwned(db: Db | Tx, userId: number, now: number, filter?: ImageListFilter) {
  return (
    (yield* q(
      db
        .select({ n: count() })
        .from(images)
        .where(ownedWhere(userId, now, filter)),
    ))[0]?.n ?? 0
  )
}

/** One page of the user's live images (narrowed by `filter`), newest first unless `order` says otherwise. */
export function ownedPage(
  db: Db,
  userId: number,
  now: number,
  filter: ImageListFilter,
  page: { limit: number; offset: number },
  order: ImageListOrder = { by: 'date', direction: 'desc' },
) {
  const direction = order.direction === 'asc' ? asc : desc
  return (
    db
      .select()
      .from(images)
      .where(ownedWhere(userId, now, filter))
      // Ties (same size, same views) keep the upload order, so pages never overlap.
      .orderBy(direction(sortColumns[order.by]), direction(insertionOrder(images)))
      .limit(page.limit)
      .offset(page.offset)
      .then((rows) => rows)
  )
}

const bytesStored = sql<number>`coalesce(sum(${images.size}), 0)`.mapWith(Number)

/**
 * Bytes stored: of one owner's live images (what their quota counts: an expired image stops counting at once, before
 * the sweeper removes it), or of every row when no owner is given (the metrics).
 */
export function* storageUsed(db: Db | Tx, owner?: { userId: number; now: number }): Step<number> {
  const [row] = yield* q(
    db
      .select({ used: bytesStored })
      .from(images)
      .where(owner && and(eq(images.userId, owner.userId), liveImage(owner.now))),
  )
  return Number(row?.used ?? 0)
}

/**
 * For a query over users: the count and bytes of the live images of the user whose id is `ownerId`, as correlated
 * subqueries. Qualified by hand: drizzle renders columns inside sql`` unqualified, and a bare "id" in the subquery
 * would be images.id.
 */
export function liveTotalsOf(ownerId: SQL, now: number) {
  const owned = sql`${images}.${sql.identifier(images.userId.name)} = ${ownerId} and ${liveImage(now)}`
  return {
    totalImages: sql<number>`(select count(*) from ${images} where ${owned})`.mapWith(Number),
    storageUsed: sql<number>`(select ${bytesStored} from ${images} where ${owned})`.mapWith(Number),
  }
}

/** An upload window's row. */
export function* findWindow(db: Db | Tx, key: string) {
  return (yield* q(db.select().from(uploadWindows).where(eq(uploadWindows.key, key))))[0]
}

export function* saveWindow(db: Db | Tx, key: string, windowStart: Date, used: number): Step<void> {
  yield* q(
    db
      .insert(uploadWindows)
      .values({ key, windowStart, used })
      .onConflictDoUpdate({ target: uploadWindows.key, set: { windowStart, used } }),
  )
}

/**
 * Adds requests to windows shared by the instances on one PostgreSQL database (the global per-IP limit, keyed
 * `api:<ip>`): one statement for the batch; a window that ended restarts at `now` with the new count. Answers each
 * window's start and total.
 */
export async function addToSharedWindows(
  db: Db,
  batch: { key: string; count: number }[],
  now: number,
  windowMs: number,
): Promise<{ key: string; start: number; used: number }[]> {
  const rows = await rawRows<{ key: string; window_start: string | number; used: string | number }>(
    db,
    sql`INSERT INTO upload_windows (key, window_start, used)
        SELECT v.key, ${now}, v.n FROM json_to_recordset(${JSON.stringify(batch.map((b) => ({ key: b.key, n: b.count })))}::text::json) AS v(key text, n integer)
        ON CONFLICT (key) DO UPDATE SET
          window_start = CASE WHEN upload_windows.window_start + ${windowMs} <= ${now} THEN ${now} ELSE upload_windows.window_start END,
          used = CASE WHEN upload_windows.window_start + ${windowMs} <= ${now} THEN excluded.used ELSE upload_windows.used + excluded.used END
        RETURNING key, window_start, used`,
  )
  return rows.map((r) => ({ key: r.key, start: Number(r.window_start), used: Number(r.used) }))
}

export const deleteWindows = async (db: Db, keys: string[]) =>
  await db.delete(uploadWindows).where(inArray(uploadWindows.key, keys))

/** Removes the windows that started before `startedBefore`; returns how many went. */
export const deleteWindowsStartedBefore = async (db: Db, startedBefore: number): Promise<number> =>
  (
    await db
      .delete(uploadWindows)
      .where(lte(uploadWindows.windowStart, new Date(startedBefore)))
      .returning({ key: uploadWindows.key })
  ).length

/** An album's live images as `audience` may see them (the owner all, others only public ones). */
const inAlbum = (albumId: string, audience: 'owner' | 'public'): SQL =>
  and(membership.of(albumId), liveImage(), audience === 'owner' ? undefined : eq(images.visibility, 'public'))!

/** Images of an album, the most recently added first. */
export async function albumImagesOf(db: Db, albumId: string, audience: 'owner' | 'public'): Promise<Image[]> {
  const rows = await db
    .select({ image: images })
    .from(membership.table)
    .innerJoin(images, eq(images.id, membership.imageId))
    .where(inAlbum(albumId, audience))
    .orderBy(...membership.newestAddedFirst)
  return rows.map((r) => r.image)
}

/** How many images of an album the audience sees, and the most recently added one (the cover). */
export async function albumStats(db: Db, albumId: string, audience: 'owner' | 'public') {
  const where = inAlbum(albumId, audience)
  const [[counted], [cover]] = await Promise.all([
    db.select({ n: count() }).from(membership.table).innerJoin(images, eq(images.id, membership.imageId)).where(where),
    db
      .select({ id: images.id, ext: images.ext })
      .from(membership.table)
      .innerJoin(images, eq(images.id, membership.imageId))
      .where(where)
      .orderBy(...membership.newestAddedFirst)
      .limit(1),
  ])
  return { imageCount: counted?.n ?? 0, cover }
}

/** Scan states a feed may show: no scan needed, or scanned. 'pending' images stay hidden until a rescan decides. */
const SHOWN = ['none', 'done'] as const
const scanShown = () => inArray(images.scanStatus, [...SHOWN])

/**
 * Images the gallery may show: public, live, not NSFW, scanned or exempt from scanning, not from a banned account.
 * Needs `users` left-joined.
 */
const feedVisible = (scan: SQL = scanShown()) =>
  and(
    eq(images.visibility, 'public'),
    eq(images.nsfw, false),
    scan,
    liveImage(),
    or(isNull(images.userId), eq(accounts.banned, false)),
  )

/**
 * SQLite's search condition: each word a quoted string (words hold only letters, digits and marks, so never a quote:
 * no FTS syntax gets in) with a prefix star, joined by FTS5's implicit AND.
 */
const ftsMatch = (words: string[]) =>
  sql`${images.id} IN (
    SELECT d.image_id FROM image_search JOIN search_docs d ON d.docid = image_search.rowid
    WHERE image_search MATCH ${words.map((w) => `"${w}"*`).join(' ')})`

/** The feeds' conditions (each query of a feed left-joins the owner's account). */
export const feeds = {
  gallery: () => feedVisible(),
  /**
   * Gallery images with one search document (a filename, or the title of a public album holding them) that has every
   * word of `words` as a prefix of one of its words: FTS5 on SQLite (migration 0001_search_fts), tsvector on PostgreSQL.
   */
  search: (words: string[]) => and(feedVisible(), engine === 'pg' ? pgSearchMatch(words) : ftsMatch(words)),
  /** A user's public images, NSFW ones included (flagged), pending scans left out. */
  profile: (userId: number) =>
    and(eq(images.userId, userId), eq(images.visibility, 'public'), scanShown(), liveImage()),
}

/** A feed's image and its owner's name (null for anonymous uploads). */
export type FeedRow = { image: Image; username: string | null }

const newestFirst = [desc(images.createdAt), desc(insertionOrder(images))]

/** How many images a feed holds. */
export const feedTotal = async (db: Db, where: SQL | undefined) =>
  (
    await db.select({ n: count() }).from(images).leftJoin(accounts.table, eq(accounts.id, images.userId)).where(where)
  )[0]?.n ?? 0

/** The rows of one page matching `where` (users left-joined), newest first. */
export function feedRows(db: Db, where: SQL | undefined, page: { limit: number; offset: number }): Promise<FeedRow[]> {
  return db
    .select({ image: images, username: accounts.username })
    .from(images)
    .leftJoin(accounts.table, eq(accounts.id, images.userId))
    .where(where)
    .orderBy(...newestFirst)
    .limit(page.limit)
    .offset(page.offset)
    .then((rows) => rows)
}

/**
 * The gallery's rows, without sorting the whole gallery: the images_feed index (visibility, nsfw, scan_status,
 * created_at) yields each shown scan state newest first, so each state is walked only as deep as the page reaches
 * and the two runs are merged. A plain ORDER BY over `scan_status IN (...)` sorts every public image on each request.
 */
export async function galleryRows(db: Db, page: { limit: number; offset: number }): Promise<FeedRow[]> {
  const run = (state: (typeof SHOWN)[number]) =>
    db
      .select({ id: images.id, created_at: images.createdAt, rid: insertionOrder(images).as('rid') })
      .from(images)
      .leftJoin(accounts.table, eq(accounts.id, images.userId))
      .where(feedVisible(eq(images.scanStatus, state)))
      .orderBy(...newestFirst)
      .limit(page.offset + page.limit)
  const ids = (
    await rawRows<{ id: string }>(
      db,
      sql`SELECT id FROM (SELECT * FROM (${run('none')}) AS unscanned UNION ALL SELECT * FROM (${run('done')}) AS scanned)
          AS feed ORDER BY created_at DESC, rid DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
    )
  ).map((r) => r.id)
  if (ids.length === 0) return []
  const rows = await db
    .select({ image: images, username: accounts.username })
    .from(images)
    .leftJoin(accounts.table, eq(accounts.id, images.userId))
    .where(inArray(images.id, ids))
  const byId = new Map(rows.map((r) => [r.image.id, r]))
  return ids.flatMap((id) => byId.get(id) ?? [])
}
