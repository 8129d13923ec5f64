import type { ChangeFeed } from '../../db/changes'
import { type Db, type Step, snapshot, type Tx } from '../../db/client'
import type { Image } from '../../db/schema'
import type { ListPage } from '../../http/pagination'
import { albumImagesOf, albumStats, type CountedAlbum } from '../albums/repository'
import { boundedPage, feeds, searchScope } from '../gallery/repository'
import { countedPage, countedTotal, type ListedRow, newestInsertion } from './counts'
import { countNamed, type ImageListFilter, type ImageListOrder, imagesAmong, ownedList, ownedPage } from './repository'

/** A page of a list: its rows, its total and the insertion it is pinned to (the answer's `asOf`). */
export interface ListResult {
  total: number
  rows: ListedRow[]
  asOf: number
}

/** The public feeds, named by plain values (a list read may run in another thread: src/modules/images/reads.ts). */
export type Feed = { kind: 'gallery' } | { kind: 'profile'; userId: number }

/** Search scopes kept (a few hundred KB at most: SEARCH_SCOPE ids each). */
const SCOPES_KEPT = 64

/**
 * A search's scope (searchScope), kept until the images change: the full-text lookup was half a search's cost at a
 * million images, and a visitor paging through results, or many asking for the same words, ask for the same scope.
 * `changes` must tell every commit that could change a scope, inserts too: the feed of a connection that never writes
 * (a read Worker's: every commit it sees is another connection's, told at catchUp) does. Least recently used first out.
 */
function keptScopes(db: Db, changes: ChangeFeed) {
  const kept = new Map<string, { generation: number; scope: Awaited<ReturnType<typeof searchScope>> }>()
  /** Moved by every change told: a scope looked up before it is not used after it. */
  let generation = 0
  changes.on('images', () => generation++)
  return async (words: string[], scope: number) => {
    const key = JSON.stringify([words, scope])
    changes.catchUp('images')
    const now = generation
    const hit = kept.get(key)
    kept.delete(key)
    if (hit?.generation === now) {
      kept.set(key, hit)
      return hit.scope
    }
    const found = await searchScope(db, words, scope)
    kept.set(key, { generation: now, scope: found })
    if (kept.size > SCOPES_KEPT) kept.delete(kept.keys().next().value!)
    return found
  }
}

/**
 * The list reads (the gallery, profiles, search, an owner's list, albums), with plain arguments and results, so they
 * can run on a read-only connection in a Worker (reads.ts). A paged list reads its counts and rows on one snapshot,
 * pinned to the page's `asOf` (the newest insertion when unset), at the time `now`. `changes`: see keptScopes (only
 * for a connection that never writes); without it every search looks its scope up.
 */
export function listReads(db: Db, changes?: ChangeFeed) {
  const scopeOf = changes ? keptScopes(db, changes) : (words: string[], scope: number) => searchScope(db, words, scope)
  const pinned = <T extends { total: number; rows: ListedRow[] }>(
    page: ListPage,
    read: (tx: Tx, asOf: number) => Step<T>,
  ): Promise<T & { asOf: number }> =>
    snapshot(db, function* (tx) {
      const asOf = page.asOf ?? (yield* newestInsertion(tx))
      return { ...(yield* read(tx, asOf)), asOf }
    })

  return {
    feed(feed: Feed, page: ListPage, now: number): Promise<ListResult> {
      const list = feed.kind === 'gallery' ? feeds.gallery() : feeds.profile(feed.userId)
      return pinned(page, (tx, asOf) => countedPage(tx, list, page, now, asOf))
    },

    /** The gallery images of the newest `scope` search documents matching `words`; `capped`: more matched. */
    async search(
      words: string[],
      scope: number,
      page: ListPage,
      now: number,
    ): Promise<ListResult & { capped: boolean }> {
      const { ids, capped } = await scopeOf(words, scope)
      const where = feeds.search(ids)
      return { ...(await pinned(page, (tx, asOf) => boundedPage(tx, where, page, now, asOf))), capped }
    },

    /** An album's images the audience sees at `now`, the most recently added first: all, or one page. */
    album(
      albumId: string,
      audience: 'owner' | 'public',
      now: number,
      page?: { limit: number; offset: number },
    ): Promise<Image[]> {
      return albumImagesOf(db, albumId, audience, now, page)
    },

    /**
     * The ids and extensions of the rows among `ids` (the orphan sweep asks about each batch of stored files: random
     * rows, a few ms cold at a million, so on SQLite they are looked up beside the event loop too).
     */
    storedAmong(ids: string[]) {
      return imagesAmong(db, ids)
    },

    /** How many images of each album the audience sees at `now`, and its cover (the most recently added). */
    albumStats(albums: CountedAlbum[], audience: 'owner' | 'public', now: number) {
      return albumStats(db, albums, audience, now)
    },

    /**
     * An owner's images, narrowed by `filter`, in `order`: by date (the default) a page is found from the counts; a
     * name filter or another order walks the rows. A name filter's pages stop at `scope` matches (`capped`).
     */
    owned(
      userId: number,
      filter: ImageListFilter,
      order: ImageListOrder,
      page: ListPage,
      now: number,
      scope: number,
    ): Promise<ListResult & { capped?: boolean }> {
      return pinned(page, function* (tx, asOf) {
        if (!filter.name && order.by === 'date')
          return yield* countedPage(tx, ownedList(userId, filter), { ...page, direction: order.direction }, now, asOf)
        if (!filter.name) {
          const total = yield* countedTotal(tx, ownedList(userId, filter), now, asOf)
          const rows = yield* ownedPage(tx, userId, now, filter, { ...page, asOf }, order)
          return { total, rows: rows.map(unowned) }
        }
        const { total, capped, among } = yield* countNamed(tx, userId, now, filter, asOf, scope)
        // Past the cap a page is cut short, then empty: total and the pages agree.
        const limit = Math.min(page.limit, Math.max(0, total - page.offset))
        const rows =
          limit === 0 ? [] : yield* ownedPage(tx, userId, now, filter, { ...page, limit, asOf }, order, among)
        return { total, capped, rows: rows.map(unowned) }
      })
    },
  }
}

/** An owner's row as a list row (the owner's own list names no one). */
const unowned = (image: Image): ListedRow => ({ image, username: null })

export type ListReads = ReturnType<typeof listReads>
