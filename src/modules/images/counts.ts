import { and, asc, desc, eq, gt, gte, lt, type SQL, sql } from 'drizzle-orm'
import { type Db, q, type Step, type Tx, transaction } from '../../db/client'
import { notIndexed, sqlTrue } from '../../db/dialect'
import { insertionOrder } from '../../db/order'
import { type Image, imageCounts, images } from '../../db/schema'
import { accounts } from '../auth/repository'
import { expiredImage, liveImage } from './live'

/**
 * Every query of image_counts (owned by the images feature, kept by the triggers of migration 0014_image_counts_
 * triggers): totals and deep pages read from per-day counts instead of counting or walking rows. The counts hold every
 * row; what a list does not show of them (expired images the sweep has not removed yet, the images of banned accounts,
 * rows inserted after the moment a list is pinned to) is found through an index and taken off.
 */

/** image_counts' owner of every image (0 is the owner of anonymous uploads). */
export const EVERYONE = -1
/** The length of a day of image_counts (`created_at / DAY_MS`). */
export const DAY_MS = 86_400_000

/** The day of an image's upload, as image_counts numbers them. */
const dayOf = sql<number>`${images.createdAt} / ${sql.raw(String(DAY_MS))}`.mapWith(Number)

/**
 * Rows inserted up to `asOf` (a pinned list's). The unary plus keeps the planners from walking rows in insertion
 * order for it: it narrows nothing but the last moments' rows.
 */
export const insertedBy = (asOf: number) => sql`+${insertionOrder(images)} <= ${asOf}`

/** A list whose totals and pages come from image_counts. */
export interface CountedList {
  /** Whose counts: a user's id, or EVERYONE. */
  owner: number
  /** How many of each day's images the list shows, over image_counts' columns. */
  tally: SQL<number>
  /** The images it shows (users left-joined), expiry aside. */
  where: SQL
  /** The gallery: the counts of banned accounts' images are taken off (the rows are, by `where`). */
  withoutBanned?: boolean
}

/** An owner's images narrowed by visibility and NSFW flag, as the sum of image_counts' columns that counts them. */
export function ownedTally(filter: { visibility?: Image['visibility']; nsfw?: boolean }): SQL<number> {
  const c = imageCounts
  const cell = {
    'any,any': sql`${c.images}`,
    'public,any': sql`${c.public}`,
    'private,any': sql`${c.images} - ${c.public}`,
    'any,true': sql`${c.nsfw}`,
    'any,false': sql`${c.images} - ${c.nsfw}`,
    'public,true': sql`${c.publicNsfw}`,
    'public,false': sql`${c.public} - ${c.publicNsfw}`,
    'private,true': sql`${c.nsfw} - ${c.publicNsfw}`,
    'private,false': sql`${c.images} - ${c.public} - ${c.nsfw} + ${c.publicNsfw}`,
  } as const
  const key = `${filter.visibility ?? 'any'},${filter.nsfw ?? 'any'}` as keyof typeof cell
  return cell[key] as SQL<number>
}

/** What the gallery shows of each day's images (listed, before bans) and what a profile shows (shown). */
export const feedTally = {
  gallery: (): SQL<number> => sql`${imageCounts.listed}`,
  profile: (): SQL<number> => sql`${imageCounts.shown}`,
}

/**
 * The images of a list (users left-joined), grouped by day: how many each day holds. `byInsertion`: the rows are found
 * by insertion order, which SQLite is told (its planner would rather walk an owner's index for `user_id = ?`).
 */
function* rowsPerDay(db: Db | Tx, where: SQL, byInsertion = false): Step<Map<number, number>> {
  const rows = yield* q(
    db
      .select({ day: dayOf, n: sql<number>`count(*)`.mapWith(Number) })
      .from(byInsertion ? notIndexed(images) : images)
      .leftJoin(accounts.table, eq(accounts.id, images.userId))
      .where(where)
      .groupBy(dayOf),
  )
  return new Map(rows.map((r) => [r.day, r.n]))
}

/** The newest insertion order (a list pinned to it leaves out rows inserted later), 0 when there is no image. */
export function* newestInsertion(db: Db | Tx): Step<number> {
  const [row] = yield* q(db.select({ n: sql<number>`max(${insertionOrder(images)})`.mapWith(Number) }).from(images))
  return row?.n ?? 0
}

/** A list's images per day at `now`, as of insertion `asOf`: newest day first, days it shows nothing of left out. */
function* listDays(db: Db | Tx, list: CountedList, now: number, asOf: number): Step<[day: number, n: number][]> {
  const days = new Map<number, number>()
  const add = (day: number, n: number) => days.set(day, (days.get(day) ?? 0) + n)
  for (const r of yield* q(
    db
      .select({ day: imageCounts.day, n: sql<number>`${list.tally}`.mapWith(Number) })
      .from(imageCounts)
      .where(eq(imageCounts.ownerId, list.owner)),
  ))
    add(r.day, r.n)
  if (list.withoutBanned) {
    // Few accounts are banned: their counts are found through users_banned.
    for (const r of yield* q(
      db
        .select({ day: imageCounts.day, n: sql<number>`sum(${list.tally})`.mapWith(Number) })
        .from(imageCounts)
        .innerJoin(accounts.table, eq(accounts.id, imageCounts.ownerId))
        .where(sql`${accounts.banned} = ${sqlTrue}`)
        .groupBy(imageCounts.day),
    ))
      add(r.day, -r.n)
  }
  // Expired, not swept yet: through images_expires (images_user_expires for an owner), a short range.
  for (const [day, n] of yield* rowsPerDay(db, and(list.where, expiredImage(now))!)) add(day, -n)
  // Inserted after the moment the list is pinned to: through the insertion order, rows of the last moments.
  const later = and(list.where, liveImage(now), gt(insertionOrder(images), asOf))!
  for (const [day, n] of yield* rowsPerDay(db, later, true)) add(day, -n)
  return [...days].filter(([, n]) => n > 0).sort((a, b) => b[0] - a[0])
}

/** A list's row and its owner's name (null for anonymous uploads). */
export type ListedRow = { image: Image; username: string | null }

export interface ListPage {
  limit: number
  offset: number
  /** Newest first (the default), or oldest first. */
  direction?: 'desc' | 'asc'
}

/**
 * A list's total and one page of it at `now`, as of insertion `asOf` (rows inserted later are left out, so pages do
 * not shift while someone pages through). The page is found by summing days from the end the order starts at, then
 * walking only the rows of the day it starts in: a deep page costs what the first does.
 */
export function* countedPage(
  db: Db | Tx,
  list: CountedList,
  page: ListPage,
  now: number,
  asOf: number,
): Step<{ total: number; rows: ListedRow[] }> {
  const days = yield* listDays(db, list, now, asOf)
  const total = days.reduce((sum, [, n]) => sum + n, 0)
  const ascending = page.direction === 'asc'
  if (ascending) days.reverse()
  let before = 0
  const start = days.find(([, n]) => {
    if (before + n > page.offset) return true
    before += n
    return false
  })
  if (!start) return { total, rows: [] }
  // Rows from the start of that day on, in the list's order: only the day's first `skip` are walked past.
  const from = ascending
    ? gte(images.createdAt, new Date(start[0] * DAY_MS))
    : lt(images.createdAt, new Date((start[0] + 1) * DAY_MS))
  const direction = ascending ? asc : desc
  const rows = yield* q(
    db
      .select({ image: images, username: accounts.username })
      .from(images)
      .leftJoin(accounts.table, eq(accounts.id, images.userId))
      .where(and(list.where, liveImage(now), insertedBy(asOf), from))
      .orderBy(direction(images.createdAt), direction(insertionOrder(images)))
      .limit(page.limit)
      .offset(page.offset - before),
  )
  return { total, rows }
}

/** A list's total at `now`, as of insertion `asOf`. */
export function* countedTotal(db: Db | Tx, list: CountedList, now: number, asOf: number): Step<number> {
  const days = yield* listDays(db, list, now, asOf)
  return days.reduce((sum, [, n]) => sum + n, 0)
}

/**
 * An owner's live images at `now` and the bytes they store (what /api/v1/me shows and the quota counts): the owner's
 * counts, less the expired images not swept yet (through images_user_expires).
 */
export function* ownerTotals(db: Db | Tx, userId: number, now: number): Step<{ images: number; bytes: number }> {
  const [counted] = yield* q(
    db
      .select({
        images: sql<number>`coalesce(sum(${imageCounts.images}), 0)`.mapWith(Number),
        bytes: sql<number>`coalesce(sum(${imageCounts.bytes}), 0)`.mapWith(Number),
      })
      .from(imageCounts)
      .where(eq(imageCounts.ownerId, userId)),
  )
  const [expired] = yield* q(
    db
      .select({
        images: sql<number>`count(*)`.mapWith(Number),
        bytes: sql<number>`coalesce(sum(${images.size}), 0)`.mapWith(Number),
      })
      .from(images)
      .where(and(eq(images.userId, userId), expiredImage(now))),
  )
  return {
    images: (counted?.images ?? 0) - (expired?.images ?? 0),
    bytes: (counted?.bytes ?? 0) - (expired?.bytes ?? 0),
  }
}

/** The bytes of every stored original, expired ones not swept yet included (the metrics). */
export function* bytesStored(db: Db | Tx): Step<number> {
  const [row] = yield* q(
    db
      .select({ bytes: sql<number>`coalesce(sum(${imageCounts.bytes}), 0)`.mapWith(Number) })
      .from(imageCounts)
      .where(eq(imageCounts.ownerId, EVERYONE)),
  )
  return row?.bytes ?? 0
}

/**
 * For a query over users: the count and bytes of the live images of the user whose id is `ownerId`, as correlated
 * subqueries of ownerTotals' two reads. Qualified by hand: drizzle renders columns inside sql`` unqualified.
 */
export function liveTotalsOf(ownerId: SQL, now: number) {
  const counts = sql`${imageCounts} where ${imageCounts}.${sql.identifier(imageCounts.ownerId.name)} = ${ownerId}`
  const expired = sql`${images} where ${images}.${sql.identifier(images.userId.name)} = ${ownerId} and ${expiredImage(now)}`
  const sumOf = (column: SQL) => sql`coalesce(sum(${column}), 0)`
  return {
    totalImages:
      sql<number>`((select ${sumOf(sql`${imageCounts.images}`)} from ${counts}) - (select count(*) from ${expired}))`.mapWith(
        Number,
      ),
    storageUsed:
      sql<number>`((select ${sumOf(sql`${imageCounts.bytes}`)} from ${counts}) - (select ${sumOf(sql`${images.size}`)} from ${expired}))`.mapWith(
        Number,
      ),
  }
}

/** The counts of a group of images rows, as the triggers keep them (migrations/0014_image_counts_triggers.sql). */
const tallies = () => {
  const count = (condition: SQL) => sql<number>`sum(CASE WHEN ${condition} THEN 1 ELSE 0 END)`.mapWith(Number)
  const isPublic = sql`${images.visibility} = 'public'`
  const nsfw = sql`${images.nsfw} = ${sqlTrue}`
  const shown = sql`${isPublic} AND ${images.scanStatus} <> 'pending'`
  return {
    images: sql<number>`count(*)`.mapWith(Number),
    bytes: sql<number>`coalesce(sum(${images.size}), 0)`.mapWith(Number),
    public: count(isPublic),
    nsfw: count(nsfw),
    publicNsfw: count(sql`${isPublic} AND ${nsfw}`),
    shown: count(shown),
    listed: count(sql`${shown} AND NOT (${nsfw})`),
  }
}
type Tallies = { [K in keyof ReturnType<typeof tallies>]: number }
const TALLY_KEYS = Object.keys(tallies()) as (keyof Tallies)[]

/** About how many of one owner's rows are recounted per transaction: each stays short, whatever the owner holds. */
const ROWS_PER_CHECK = 20_000

/** A span of days, `from` included, `to` excluded; undefined: every day. */
type Days = { from: number; to: number } | undefined

/**
 * Makes one owner's counts over `days` what `expected` says, day by day: the days that differ are rewritten, the days
 * it lacks removed. Returns how many days differed.
 */
function* settle(tx: Tx, owner: number, days: Days, expected: Map<number, Tallies>, repair: boolean): Step<number> {
  const span = days && and(gte(imageCounts.day, days.from), lt(imageCounts.day, days.to))
  const kept = yield* q(
    tx
      .select()
      .from(imageCounts)
      .where(and(eq(imageCounts.ownerId, owner), span)),
  )
  const wrong = new Set<number>()
  for (const row of kept) {
    const want = expected.get(row.day)
    if (!want ? TALLY_KEYS.some((k) => Number(row[k]) !== 0) : TALLY_KEYS.some((k) => Number(row[k]) !== want[k]))
      wrong.add(row.day)
  }
  const keptDays = new Set(kept.map((r) => r.day))
  for (const day of expected.keys()) if (!keptDays.has(day)) wrong.add(day)
  if (!repair) return wrong.size
  for (const day of wrong) {
    const at = and(eq(imageCounts.ownerId, owner), eq(imageCounts.day, day))
    yield* q(tx.delete(imageCounts).where(at))
    const want = expected.get(day)
    if (want) yield* q(tx.insert(imageCounts).values({ ownerId: owner, day, ...want }))
  }
  return wrong.size
}

/** The owner's images (0: anonymous uploads). */
const ownedBy = (owner: number) => (owner === 0 ? sql`${images.userId} IS NULL` : eq(images.userId, owner))

/** The owner's rows over `days` counted again, per day (through images_user_created). */
function* recountOwner(tx: Tx, owner: number, days: Days): Step<Map<number, Tallies>> {
  const span =
    days && and(gte(images.createdAt, new Date(days.from * DAY_MS)), lt(images.createdAt, new Date(days.to * DAY_MS)))
  const rows = yield* q(
    tx
      .select({ day: dayOf, ...tallies() })
      .from(images)
      .where(and(ownedBy(owner), span))
      .groupBy(dayOf),
  )
  return new Map(rows.map(({ day, ...t }) => [day, t]))
}

/**
 * The first and last day the owner has rows or counts on (through images_user_created and the counts' key: min and
 * max of an index's column are one step each), and about how many rows it holds (its counts, right or not).
 */
async function spanOf(db: Db, owner: number): Promise<{ from: number; to: number; rows: number } | null> {
  const number = (value: SQL) => sql<number | null>`${value}`.mapWith((v) => (v === null ? null : Number(v)))
  const [counted] = await db
    .select({
      from: number(sql`min(${imageCounts.day})`),
      to: number(sql`max(${imageCounts.day})`),
      rows: number(sql`sum(${imageCounts.images})`),
    })
    .from(imageCounts)
    .where(eq(imageCounts.ownerId, owner))
  const [stored] = await db
    .select({ first: number(sql`min(${images.createdAt})`), last: number(sql`max(${images.createdAt})`) })
    .from(images)
    .where(ownedBy(owner))
  const day = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : Math.floor(ms / DAY_MS))
  const firsts = [counted?.from, day(stored?.first)].filter((d) => d !== null && d !== undefined)
  const lasts = [counted?.to, day(stored?.last)].filter((d) => d !== null && d !== undefined)
  if (firsts.length === 0) return null
  return { from: Math.min(...firsts), to: Math.max(...lasts) + 1, rows: counted?.rows ?? 0 }
}

/** Every owner's counts added up per day: what EVERYONE's must be. */
function* sumOfOwners(tx: Tx): Step<Map<number, Tallies>> {
  const sums = Object.fromEntries(
    TALLY_KEYS.map((k) => [k, sql<number>`coalesce(sum(${imageCounts[k]}), 0)`.mapWith(Number)]),
  ) as { [K in keyof Tallies]: SQL<number> }
  const rows = yield* q(
    tx
      .select({ day: imageCounts.day, ...sums })
      .from(imageCounts)
      .where(gte(imageCounts.ownerId, 0))
      .groupBy(imageCounts.day),
  )
  return new Map(rows.filter((r) => r.images !== 0).map(({ day, ...t }) => [day, t]))
}

/**
 * Recounts image_counts from the rows (`cli check`): each owner about ROWS_PER_CHECK rows per transaction (a short one,
 * through the owner's index, so a running server's writes wait little), then everyone's from the owners' sums. With `repair`,
 * what differs is rewritten. `owners` walks the accounts in batches (the auth repository's). Returns how many owners
 * were checked and how many days were wrong.
 */
export async function recountImageCounts(
  db: Db,
  owners: (after: number, limit: number) => Promise<number[]>,
  opts: { repair: boolean },
): Promise<{ owners: number; wrongDays: number }> {
  let checked = 0
  let wrongDays = 0
  const settleDays = async (owner: number, days: Days, expected: (tx: Tx) => Step<Map<number, Tallies>>) => {
    wrongDays += await transaction(db, function* (tx) {
      return yield* settle(tx, owner, days, yield* expected(tx), opts.repair)
    })
  }
  const check = async (owner: number) => {
    const span = await spanOf(db, owner)
    // As many days per transaction as hold about ROWS_PER_CHECK rows (all of them for most owners).
    const step = span ? Math.max(1, Math.floor(((span.to - span.from) * ROWS_PER_CHECK) / Math.max(1, span.rows))) : 1
    for (let from = span?.from ?? 0; span && from < span.to; from += step) {
      const days = { from, to: Math.min(from + step, span.to) }
      await settleDays(owner, days, (tx) => recountOwner(tx, owner, days))
    }
    checked++
  }
  await check(0)
  for (let after = 0; ; ) {
    const batch = await owners(after, 500)
    for (const owner of batch) await check(owner)
    if (batch.length < 500) break
    after = batch.at(-1)!
  }
  // Counts of owners that no longer exist (their images went with the account): nothing is expected of them.
  const strays = await db
    .selectDistinct({ owner: imageCounts.ownerId })
    .from(imageCounts)
    .where(
      and(
        gt(imageCounts.ownerId, 0),
        sql`NOT EXISTS (SELECT 1 FROM ${accounts.table} WHERE ${accounts.id} = ${imageCounts.ownerId})`,
      ),
    )
  for (const { owner } of strays) await check(owner)
  await settleDays(EVERYONE, undefined, sumOfOwners)
  checked++
  return { owners: checked, wrongDays }
}
