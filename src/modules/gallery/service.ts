import { and, count, desc, eq, inArray, isNull, or, sql, type SQL } from 'drizzle-orm'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import { images, users, type Image } from '../../db/schema'
import { badRequest, notFound } from '../../http/errors'
import { pageCount } from '../../http/pagination'
import { iso } from '../../lib/time'
import { imageLinks, type LinkBase } from '../images/links'
import { liveImage } from '../images/service'

export interface Page {
  page: number
  limit: number
  offset: number
}

/** Longest accepted search text and most words in it: bounds the work one query can cause. */
export const MAX_QUERY_LENGTH = 256
export const MAX_QUERY_WORDS = 16

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

/** Images a public feed may show: public, live, not NSFW, not waiting for a scan, and not from a banned account. */
const feedVisible = () =>
  and(
    eq(images.visibility, 'public'),
    eq(images.nsfw, false),
    inArray(images.scanStatus, ['none', 'done']),
    liveImage(),
    or(isNull(images.userId), eq(users.banned, false)),
  )

export type GalleryService = ReturnType<typeof createGalleryService>

export function createGalleryService(deps: { db: Db; config: Config }) {
  const { db, config } = deps
  const base: LinkBase = { publicUrl: config.publicUrl, cdnBase: config.cdnUrl }

  function element(row: { image: Image; username: string | null }) {
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

  /** One page of images matching `where` (users left-joined), newest first, with its totals. */
  function feedPage(where: SQL | undefined, page: Page) {
    const total =
      db
        .select({ n: count() })
        .from(images)
        .leftJoin(users, eq(users.id, images.userId))
        .where(where)
        .get()?.n ?? 0
    const rows =
      page.offset >= total
        ? []
        : db
            .select({ image: images, username: users.username })
            .from(images)
            .leftJoin(users, eq(users.id, images.userId))
            .where(where)
            .orderBy(desc(images.createdAt), desc(sql`${images}.rowid`))
            .limit(page.limit)
            .offset(page.offset)
            .all()
    return { success: true as const, images: rows.map(element), page: page.page, totalPages: pageCount(total, page.limit), total }
  }

  return {
    /** The public gallery. */
    gallery(page: Page) {
      return feedPage(feedVisible(), page)
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
      const user = db
        .select()
        .from(users)
        .where(sql`lower(${users.username}) = lower(${username})`)
        .get()
      if (!user || user.banned) throw notFound('User not found')
      const where = and(
        eq(images.userId, user.id),
        eq(images.visibility, 'public'),
        inArray(images.scanStatus, ['none', 'done']),
        liveImage(),
      )
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
