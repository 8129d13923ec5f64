import type { Config } from '../../config'
import { type Db, run } from '../../db/client'
import { badRequest, notFound } from '../../errors'
import { type ListPage, pageCount } from '../../http/pagination'
import { iso } from '../../lib/time'
import { findUserByName } from '../auth/repository'
import { isUsername } from '../auth/service'
import type { LinkBase } from '../images/links'
import type { Feed, ListReads, ListResult } from '../images/list-reads'
import { IMAGE_SHAPES } from '../images/model'
import { imageFields, pickImage } from '../images/view'
import { MAX_QUERY_LENGTH, MAX_QUERY_WORDS, SEARCH_SCOPE } from './model'
import type { FeedRow } from './repository'

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

/**
 * `reads`: where the feeds are read (images/reads.ts: a Worker on SQLite). `now`: the clock that decides which images
 * have expired (the images service's).
 */
export function createGalleryService(deps: { db: Db; config: Config; reads: ListReads; now?: () => number }) {
  const { db, config, reads } = deps
  const clock = deps.now ?? Date.now
  const base: LinkBase = { publicUrl: config.site.publicUrl, cdnBase: config.site.cdnUrl }

  function element(row: FeedRow) {
    const fields = imageFields(base, row.image)
    return {
      ...pickImage(fields, IMAGE_SHAPES.galleryItem),
      username: row.username,
      nsfw: fields.nsfw,
    }
  }

  /** A page of a feed as the API answers it. */
  function answer(page: ListPage, result: ListResult) {
    return {
      success: true as const,
      images: result.rows.map(element),
      page: page.page,
      totalPages: pageCount(result.total, page.limit),
      total: result.total,
      asOf: result.asOf,
    }
  }

  const feed = async (which: Feed, page: ListPage) => answer(page, await reads.feed(which, page, clock()))

  return {
    /** The public gallery. */
    gallery(page: ListPage) {
      return feed({ kind: 'gallery' }, page)
    },

    /** Gallery images whose filename, or the title of a public album holding them, matches every word of `q`. */
    async search(q: string | undefined, page: ListPage) {
      const text = (q ?? '').trim()
      if (!text) throw badRequest('q is required')
      if (text.length > MAX_QUERY_LENGTH) throw badRequest(`q must be at most ${MAX_QUERY_LENGTH} characters`)
      const words = searchWords(text)
      if (words === null) throw badRequest('q must contain at least one letter or digit')
      const found = await reads.search(words, SEARCH_SCOPE, page, clock())
      return { ...answer(page, found), capped: found.capped }
    },

    /** A user's public profile: their public images, NSFW ones included (flagged), pending scans left out. */
    async profile(username: string, page: ListPage) {
      // A name that no account can have is not looked up at all.
      if (!isUsername(username)) throw notFound('User not found')
      const user = await run(findUserByName(db, username))
      if (!user || user.banned) throw notFound('User not found')
      const result = await feed({ kind: 'profile', userId: user.id }, page)
      return {
        success: true as const,
        user: { username: user.username, createdAt: iso(user.createdAt), publicImages: result.total },
        images: result.images,
        page: result.page,
        totalPages: result.totalPages,
        total: result.total,
        asOf: result.asOf,
      }
    },
  }
}
