import type { ImageService } from '../images/service'
import type { Delivery } from './index'

/** What /cdn needs of an image row, and its two answers once built (index.ts). */
export interface CachedImage {
  /** SQLite's rowid of the image's row: what the update hook reports. */
  rowid: number
  id: string
  ext: string
  mime: string
  size: number
  /** Milliseconds, or null: never. Checked on every read, so an image stops being served the moment it expires. */
  expiresAt: number | null
  original?: Delivery
  thumbnail?: Delivery
}

/** Enough for a busy site's working set; an entry is a few hundred bytes. */
export const DEFAULT_CACHE_SIZE = 10_000

/**
 * The /cdn answer per image, kept in memory so a request needs no database lookup (and on local disk no stat):
 * the two were most of a /cdn request's cost (bench/README.md).
 *
 * Correctness: an entry is added only in the same synchronous step as the lookup that found the row, and SQLite's
 * update hook (`images.onRowChange`) drops it while any UPDATE or DELETE of its row runs, through any code path:
 * owner, delete token, admin, report, expiry sweep, patch, even the view-count flush. JavaScript is single-threaded
 * and the database synchronous, so no request that starts after such a write returns can see the old entry, and a
 * request that started before it and is still waiting (object stores) never puts its entry back. Expiry itself needs
 * no write: the entry carries `expiresAt`, checked on every read. Lookups that find nothing are not cached (a new
 * upload needs no invalidation). Not seen: writes by another process to the same file (the CLI works on a stopped
 * server). Bounded: the least recently used entry goes first.
 */
export function createAnswerCache(images: ImageService, max = DEFAULT_CACHE_SIZE) {
  const entries = new Map<string, CachedImage>()
  const idOfRow = new Map<number, string>()
  const drop = (entry: CachedImage) => {
    entries.delete(entry.id)
    idOfRow.delete(entry.rowid)
  }
  images.onRowChange((rowid) => {
    const id = idOfRow.get(rowid)
    if (id !== undefined) drop(entries.get(id)!)
  })

  return {
    /** The live image with this id, or undefined; malformed ids never reach the database (`images.deliverable`). */
    get(id: string): CachedImage | undefined {
      const entry = entries.get(id)
      if (entry) {
        if (entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
          drop(entry)
          return undefined
        }
        // Most recently used last: a Map keeps insertion order.
        entries.delete(id)
        entries.set(id, entry)
        return entry
      }
      const row = images.deliverable(id)
      if (!row) return undefined
      const added: CachedImage = { ...row }
      if (entries.size >= max) drop(entries.values().next().value!)
      entries.set(id, added)
      idOfRow.set(added.rowid, id)
      return added
    },
    has: (id: string) => entries.has(id),
    get size() {
      return entries.size
    },
  }
}

export type AnswerCache = ReturnType<typeof createAnswerCache>
