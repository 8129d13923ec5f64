import { and, desc, eq, inArray, isNull, or, type SQL, sql } from 'drizzle-orm'
import { type Db, q, rawRows, type Step, type Tx } from '../../db/client'
import { dialect } from '../../db/dialect'
import { insertionOrder } from '../../db/order'
import { inValues } from '../../db/values'
import { accounts } from '../auth/repository'
import { type CountedList, EVERYONE, feedTally, insertedBy, type ListedRow } from '../images/counts'
import { liveImage } from '../images/live'
import { imageJoin } from '../images/repository'
import { pgNewestMatches } from './search-pg'

/**
 * The gallery's queries: the public feeds (the gallery, a profile, a search) over images, read through the images
 * repository's imageJoin, and the search documents (search_docs, and SQLite's image_search over them, kept by triggers
 * on images, albums and album_images: migrations/0001_search_fts.sql, migrations-pg/0001_search.sql), which only the
 * gallery reads.
 */

/** Scan states a feed may show: no scan needed, or scanned. 'pending' images stay hidden until a rescan decides. */
const scanShown = () => inArray(imageJoin.scanStatus, ['none', 'done'])

/**
 * Images the gallery may show, expiry aside: public, not NSFW, scanned or exempt from scanning (listedImage, literal,
 * so images_listed serves it), not from a banned account. Needs `users` left-joined.
 */
const galleryWhere = () => and(imageJoin.listed, or(isNull(imageJoin.userId), eq(accounts.banned, false)))!

/**
 * The image ids of the newest `limit` search documents (a filename, or the title of a public album holding the image)
 * that have every word of `words` as a prefix of one of their words. SQLite's FTS5 (migration 0001_search_fts) hands
 * its matches out newest first by itself; each word is a quoted string (words hold only letters, digits and marks, so
 * never a quote: no FTS syntax gets in) with a prefix star, joined by FTS5's implicit AND. PostgreSQL: search-pg.ts.
 */
const newestMatches = (db: Db, words: string[], limit: number): Promise<string[]> =>
  dialect({ sqlite: ftsNewestMatches, pg: pgNewestMatches })(db, words, limit)

async function ftsNewestMatches(db: Db, words: string[], limit: number): Promise<string[]> {
  const docs = await rawRows<{ image_id: string }>(
    db,
    sql`SELECT d.image_id FROM search_docs d WHERE d.docid IN (
      SELECT rowid FROM image_search WHERE image_search MATCH ${words.map((w) => `"${w}"*`).join(' ')}
      ORDER BY rowid DESC LIMIT ${limit})
    ORDER BY d.docid DESC`,
  )
  return docs.map((d) => d.image_id)
}

/**
 * The images of the newest `scope` search documents matching `words`, and whether more matched (a search's count then
 * stops there). Read once: the feed's count and page are then looked up by id.
 */
export async function searchScope(db: Db, words: string[], scope: number) {
  const ids = await newestMatches(db, words, scope + 1)
  return { ids: [...new Set(ids.slice(0, scope))], capped: ids.length > scope }
}

/** The feeds: the gallery and a profile are counted lists (image_counts); a search looks at a bounded scope. */
export const feeds = {
  gallery: (): CountedList => ({
    owner: EVERYONE,
    tally: feedTally.gallery(),
    where: galleryWhere(),
    withoutBanned: true,
  }),
  /** The gallery images of a search's scope (searchScope). */
  search: (ids: string[]) => and(galleryWhere(), inValues(imageJoin.id, ids))!,
  /** A user's public images, NSFW ones included (flagged), pending scans left out. */
  profile: (userId: number): CountedList => ({
    owner: userId,
    tally: feedTally.profile(),
    where: and(eq(imageJoin.userId, userId), eq(imageJoin.visibility, 'public'), scanShown())!,
  }),
}

/** A feed's image and its owner's name (null for anonymous uploads). */
export type FeedRow = ListedRow

/**
 * A bounded feed's (a search's) total and one page, newest first, at `now` as of insertion `asOf`. The scope's shown
 * images are looked up once, by id alone, for the count and the order (each is a random lookup in a large library);
 * only the page's rows are then read whole.
 */
export function* boundedPage(
  db: Db | Tx,
  where: SQL,
  page: { limit: number; offset: number },
  now: number,
  asOf: number,
): Step<{ total: number; rows: FeedRow[] }> {
  const newestFirst = [desc(imageJoin.createdAt), desc(insertionOrder(imageJoin.table))]
  const shown = yield* q(
    db
      .select({ id: imageJoin.id })
      .from(imageJoin.table)
      .leftJoin(accounts.table, eq(accounts.id, imageJoin.userId))
      .where(and(where, liveImage(now), insertedBy(asOf)))
      .orderBy(...newestFirst),
  )
  const ids = shown.slice(page.offset, page.offset + page.limit).map((row) => row.id)
  const rows = ids.length
    ? yield* q(
        db
          .select({ image: imageJoin.table, username: accounts.username })
          .from(imageJoin.table)
          .leftJoin(accounts.table, eq(accounts.id, imageJoin.userId))
          .where(inArray(imageJoin.id, ids))
          .orderBy(...newestFirst),
      )
    : []
  return { total: shown.length, rows }
}
