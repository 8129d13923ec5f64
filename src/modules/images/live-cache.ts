import type { Image } from '../../db/schema'

/** A live image as the hot read routes show it (/cdn, GET /api/v1/image/:id), with the rowid its invalidation keys on. */
export interface LiveImage
  extends Pick<Image, 'id' | 'ext' | 'mime' | 'size' | 'width' | 'height' | 'views' | 'visibility' | 'nsfw'> {
  /** SQLite's rowid of the image's row: what the update hook reports. */
  rowid: number
  /** Milliseconds. */
  createdAt: number
  /** Milliseconds, or null: never. Checked on every read, so an image disappears the moment it expires. */
  expiresAt: number | null
}

/** Enough for a busy site's working set; an entry is a few hundred bytes. */
const DEFAULT_CACHE_SIZE = 10_000

/**
 * Live images kept in memory, so the hot read routes need no database lookup: the lookup (a read transaction per
 * request) was most of a /cdn request's cost and half of a metadata request's (bench/README.md).
 *
 * Correctness: an entry is added only in the same synchronous step as the lookup that found the row, and SQLite's
 * update hook (`onRowChange`) drops it while any UPDATE or DELETE of its row runs, through any code path: owner,
 * delete token, admin, report, expiry sweep, patch, writes by hand. The one exception is the view-count flush, whose
 * UPDATEs change only the count, which it adds to the entry itself (`viewsWritten`). JavaScript is single-threaded and
 * the database synchronous, so no request that starts after such a write returns can see the old entry, and a request
 * that started before it and is still waiting (object stores) never puts its entry back. A changed row is a new entry
 * object, so whatever a route derives from an entry and keeps with it (the /cdn answers) goes with it. Expiry needs
 * no write: the entry carries `expiresAt`, checked on every read. Lookups that find nothing are not cached (a new
 * upload needs no invalidation, so neither do the rows `cli import` inserts beside a running server). Not seen:
 * updates and deletes by another process (the CLI commands that make them work on a stopped server). Bounded: the
 * least recently used entry goes first.
 */
export function createLiveImageCache(
  source: {
    /** The live image with this id from the database, or undefined; malformed ids must never reach it. */
    lookup(id: string): LiveImage | undefined
    onRowChange(listener: (rowid: number) => void): void
  },
  max = DEFAULT_CACHE_SIZE,
  /** The clock expiry is checked against (the image service's; tests move it). */
  now: () => number = Date.now,
) {
  const entries = new Map<string, LiveImage>()
  const idOfRow = new Map<number, string>()
  const drop = (entry: LiveImage) => {
    entries.delete(entry.id)
    idOfRow.delete(entry.rowid)
  }
  source.onRowChange((rowid) => {
    const id = idOfRow.get(rowid)
    if (id !== undefined) drop(entries.get(id)!)
  })

  return {
    /** The live image with this id, or undefined. */
    get(id: string): LiveImage | undefined {
      const entry = entries.get(id)
      if (entry) {
        if (entry.expiresAt !== null && entry.expiresAt <= now()) {
          drop(entry)
          return undefined
        }
        // Most recently used last: a Map keeps insertion order.
        entries.delete(id)
        entries.set(id, entry)
        return entry
      }
      const row = source.lookup(id)
      if (!row) return undefined
      // Its own object: what a route keeps per entry (WeakMap) must never outlive the row it was derived from.
      const added = { ...row }
      if (entries.size >= max) drop(entries.values().next().value!)
      entries.set(id, added)
      idOfRow.set(added.rowid, id)
      return added
    },
    /** `n` views of this image were written to its row by the view flush, which does not drop the entry (service.ts). */
    viewsWritten(id: string, n: number) {
      const entry = entries.get(id)
      if (entry) entry.views += n
    },
    has: (id: string) => entries.has(id),
    get size() {
      return entries.size
    },
  }
}
