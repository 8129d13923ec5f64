import type { SQL } from 'drizzle-orm'
import type { Config } from '../../config'
import { type Db, run } from '../../db/client'
import { badRequest, notFound } from '../../errors'
import { pageCount } from '../../http/pagination'
import { iso } from '../../lib/time'
import { findUserByName } from '../auth/repository'
import { isUsername } from '../auth/service'
import type { LinkBase } from '../images/links'
import { IMAGE_SHAPES } from '../images/model'
import { type FeedRow, feedRows, feeds, feedTotal, galleryRows, imageFields, pickImage } from '../images/repository'
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
 * The words of user text, each matched as a prefix (the search conditions, `feeds.search`, take them as values: no
 * user text is ever query syntax). Returns null when the text has no word at all.
 */
export function searchWords(q: string): string[] | null {
  const words = q.match(WORD) ?? []
  if (words.length === 0) return null
  if (words.length > MAX_QUERY_WORDS) throw badRequest(`q may hold at most ${MAX_QUERY_WORDS} words`)
  return words
}

export type GalleryService = ReturnType<typeof createGalleryService>

export function createGalleryService(deps: { db: Db; config: Config }) {
  const { db, config } = deps
  const base: LinkBase = { publicUrl: config.publicUrl, cdnBase: config.cdnUrl }

  function element(row: FeedRow) {
    const fields = imageFields(base, row.image)
    return {
      ...pickImage(fields, IMAGE_SHAPES.galleryItem),
      username: row.username,
      nsfw: fields.nsfw,
    }
  }

  /** One page of images matching `where` (users left-joined), newest first, with its totals. */
  async function feedPage(
    where: SQL | undefined,
    page: Page,
    rowsOf: (page: Page) => Promise<FeedRow[]> = (p) => feedRows(db, where, p),
  ) {
    const total = await feedTotal(db, where)
    const rows = page.offset >= total ? [] : await rowsOf(page)
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
      return feedPage(feeds.gallery(), page, (p) => galleryRows(db, p))
    },

    /** Gallery images whose filename, or the title of a public album holding them, matches every word of `q`. */
    search(q: string | undefined, page: Page) {
      const text = (q ?? '').trim()
      if (!text) throw badRequest('q is required')
      if (text.length > MAX_QUERY_LENGTH) throw badRequest(`q must be at most ${MAX_QUERY_LENGTH} characters`)
      const words = searchWords(text)
      if (words === null) throw badRequest('q must contain at least one letter or digit')
      return feedPage(feeds.search(words), page)
    },

    /** A user's public profile: their public images, NSFW ones included (flagged), pending scans left out. */
    async profile(username: string, page: Page) {
      // A name that no account can have is not looked up at all.
      if (!isUsername(username)) throw notFound('User not found')
      const user = await run(findUserByName(db, username))
      if (!user || user.banned) throw notFound('User not found')
      const result = await feedPage(feeds.profile(user.id), page)
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
