import { and, count, desc, eq, inArray, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import { type Image, images, users } from '../../db/schema'
import { badRequest, notFound } from '../../http/errors'
import { pageCount } from '../../http/pagination'
import { iso } from '../../lib/time'
import { isUsername } from '../auth/service'
import { imageLinks, type LinkBase } from '../images/links'
import { liveImage } from '../images/service'
import { MAX_QUERY_LENGTH, MAX_QUERY_WORDS } from './model'

export interface Page {
  page: number
  limit: number
  offset: number
}

/**
 * A word is a run of letters and digits, as the FTS5 unicode61 tokenizer sees it (categories L*, N*, Co; combining
 * marks stay inside a word and lose their diacritic there). Everything else separates words.
 */
const WORD = /[\p{L}\p{N}\p{Co}][\p{L}\p{N}\p{Co}\p{M}]*/gu

/**
 * Turns user text into an FTS5 MATCH expression that cannot carry FTS syntax: every word becomes a quoted string
 * (words hold only letters, digits and marks, so they never contain a quote) with a prefix star; the words are
 * joined by the implicit AND. Returns null when the text has no word at all.
 */
export function searchExpression(q: string): string | null {
  const words = q.match(WORD) ?? []
  if (words.length === 0) return null
  if (words.length > MAX_QUERY_WORDS) throw badRequest(`q may hold at most ${MAX_QUERY_WORDS} words`)
  return words.map((w) => `"${w}"*`).join(' ')
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
    or(isNull(images.userId), eq(users.banned, false)),
  )

type Row = { image: Image; username: string | null }

export type GalleryService = ReturnType<typeof createGalleryService>

export function createGalleryService(deps: { db: Db; config: Config }) {
  const { db, config } = deps
  const base: LinkBase = { publicUrl: config.publicUrl, cdnBase: config.cdnUrl }

  function element(row: Row) {
    const { image } = row
    const links = imageLinks(base, image)
    return {
      id: image.id,
      url: links.url,
      thumbnail: links.thumbnail,
      viewer: links.viewer,
      width: image.width,
      height: image.height,
      mime: image.mime,
      views: image.views,
      created_at: iso(image.createdAt),
      username: row.username,
      nsfw: image.nsfw,
    }
  }

  const newestFirst = [desc(images.createdAt), desc(sql`${images}.rowid`)]

  /** The rows of one page matching `where` (users left-joined), newest first. */
  function plainRows(where: SQL | undefined, page: Page): Row[] {
    return db
      .select({ image: images, username: users.username })
      .from(images)
      .leftJoin(users, eq(users.id, images.userId))
      .where(where)
      .orderBy(...newestFirst)
      .limit(page.limit)
      .offset(page.offset)
      .all()
  }

  /**
   * The gallery's rows, without sorting the whole gallery: the images_feed index (visibility, nsfw, scan_status,
   * created_at) yields each shown scan state newest first, so each state is walked only as deep as the page reaches
   * and the two runs are merged. A plain ORDER BY over `scan_status IN (...)` sorts every public image on each request.
   */
  function galleryRows(page: Page): Row[] {
    const run = (state: (typeof SHOWN)[number]) =>
      db
        .select({ id: images.id, created_at: images.createdAt, rid: sql<number>`${images}.rowid`.as('rid') })
        .from(images)
        .leftJoin(users, eq(users.id, images.userId))
        .where(feedVisible(eq(images.scanStatus, state)))
        .orderBy(...newestFirst)
        .limit(page.offset + page.limit)
    const ids = db
      .all<{ id: string }>(
        sql`SELECT id FROM (SELECT * FROM (${run('none')}) UNION ALL SELECT * FROM (${run('done')}))
            ORDER BY created_at DESC, rid DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      )
      .map((r) => r.id)
    if (ids.length === 0) return []
    const rows = db
      .select({ image: images, username: users.username })
      .from(images)
      .leftJoin(users, eq(users.id, images.userId))
      .where(inArray(images.id, ids))
      .all()
    const byId = new Map(rows.map((r) => [r.image.id, r]))
    return ids.flatMap((id) => byId.get(id) ?? [])
  }

  /** One page of images matching `where` (users left-joined), newest first, with its totals. */
  function feedPage(where: SQL | undefined, page: Page, rowsOf: (page: Page) => Row[] = (p) => plainRows(where, p)) {
    const total =
      db.select({ n: count() }).from(images).leftJoin(users, eq(users.id, images.userId)).where(where).get()?.n ?? 0
    const rows = page.offset >= total ? [] : rowsOf(page)
    return {
      success: true as const,
      images: rows.map(element),
      page: page.page,
      totalPages: pageCount(total, page.limit),
      total,
    }
  }

  return {
    /** The public gallery. */
    gallery(page: Page) {
      return feedPage(feedVisible(), page, galleryRows)
    },

    /** Gallery images whose filename, or the title of a public album holding them, matches every word of `q`. */
    search(q: string | undefined, page: Page) {
      const text = (q ?? '').trim()
      if (!text) throw badRequest('q is required')
      if (text.length > MAX_QUERY_LENGTH) throw badRequest(`q must be at most ${MAX_QUERY_LENGTH} characters`)
      const expression = searchExpression(text)
      if (expression === null) throw badRequest('q must contain at least one letter or digit')
      // Each document is one filename or one public album title (see migration 0001_search_fts).
      const matches = sql`${images.id} IN (
        SELECT d.image_id FROM image_search JOIN search_docs d ON d.docid = image_search.rowid
        WHERE image_search MATCH ${expression})`
      return feedPage(and(feedVisible(), matches), page)
    },

    /** A user's public profile: their public images, NSFW ones included (flagged), pending scans left out. */
    profile(username: string, page: Page) {
      // A name that no account can have is not looked up at all.
      if (!isUsername(username)) throw notFound('User not found')
      const user = db.select().from(users).where(sql`lower(${users.username}) = lower(${username})`).get()
      if (!user || user.banned) throw notFound('User not found')
      const where = and(eq(images.userId, user.id), eq(images.visibility, 'public'), scanShown(), liveImage())
      const result = feedPage(where, page)
      return {
        success: true as const,
        user: { username: user.username, createdAt: iso(user.createdAt), publicImages: result.total },
        images: result.images,
        page: result.page,
        totalPages: result.totalPages,
        total: result.total,
      }
    },
  }
}
