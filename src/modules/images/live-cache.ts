import type { ChangeListener } from '../../db/changes'
import type { Image } from '../../db/schema'

/** A live image as the hot read routes show it (/cdn, GET /api/v1/image/:id), with its rowid (its change key on SQLite). */
export interface LiveImage
  extends Pick<
    Image,
    'id' | 'ext' | 'mime' | 'size' | 'width' | 'height' | 'views' | 'visibility' | 'nsfw' | 'frames' | 'filterPasses'
  > {
  /** The row's insertion order: SQLite's rowid, what its update hook reports (src/db/changes.ts changeKey). */
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
 * request) was most of a /cdn request's cost and half of a metadata request's (bench/README.md). A hit is answered
 * synchronously (no await, no promise); only a miss waits for the database.
 *
 * Correctness: the change feed (`onChange`, src/db/changes.ts) drops an entry when any UPDATE or DELETE of its row
 * commits, through any code path: owner, delete token, admin, report, expiry sweep, patch, writes by hand; on SQLite
 * while the statement runs (the update hook), on PostgreSQL at once for this instance's writes and at the notice for
 * another's. The one exception is the view-count flush, whose UPDATEs change only the count, which it adds to the
 * entry itself (`viewsWritten`).
 * JavaScript is single-threaded, so no request that starts after such a write returns can see the old entry. A lookup
 * is asynchronous, so a write can land while one is in flight: every row change (and every view flush) moves a
 * generation counter, and a lookup adds its row only if no change came between its start and its answer; a lookup in
 * flight when a change lands is also no longer shared with requests that start after it. So a request that started
 * before a write and is still waiting (the database, object stores) never puts its entry back. A changed row is a new
 * entry object, so whatever a route derives from an entry and keeps with it (the /cdn answers) goes with it. Expiry
 * needs no write: the entry carries `expiresAt`, checked on every read. Lookups that find nothing are not cached (a
 * new upload needs no invalidation, so neither do the rows `cli import` inserts beside a running server). Not seen on
 * SQLite: updates and deletes by another process (the CLI commands that make them work on a stopped server). Bounded:
 * the least recently used entry goes first.
 */
export function createLiveImageCache(
  source: {
    /** The live image with this id from the database, or undefined; malformed ids must never reach it. */
    lookup(id: string): Promise<LiveImage | undefined>
    /** Registers the listener of the images' change feed. */
    onChange(listener: ChangeListener): void
    /** The change key the feed tells for this image's row. */
    keyOf(image: LiveImage): string
  },
  max = DEFAULT_CACHE_SIZE,
  /** The clock expiry is checked against (the image service's; tests move it). */
  now: () => number = Date.now,
) {
  const entries = new Map<string, LiveImage>()
  const idOfKey = new Map<string, string>()
  /** Lookups in flight by id, shared by the requests that miss meanwhile; only those started since the last change. */
  const inFlight = new Map<string, Promise<LiveImage | undefined>>()
  /** Moved by every row change and view flush: a lookup that saw it move keeps its row out of the cache. */
  let generation = 0
  const drop = (entry: LiveImage) => {
    entries.delete(entry.id)
    idOfKey.delete(source.keyOf(entry))
  }
  const changed = () => {
    generation++
    inFlight.clear()
  }
  // A changed row (null: maybe any row): its entry (every entry) goes, and lookups in flight keep their rows out.
  source.onChange((key) => {
    changed()
    if (key === null) {
      entries.clear()
      idOfKey.clear()
      return
    }
    const id = idOfKey.get(key)
    if (id !== undefined) drop(entries.get(id)!)
  })

  async function load(id: string): Promise<LiveImage | undefined> {
    const started = generation
    const row = await source.lookup(id)
    if (!row) return undefined
    // Its own object: what a route keeps per entry (WeakMap) must never outlive the row it was derived from.
    const added = { ...row }
    // A write (or a view flush) landed while the lookup was in flight: the row may be the old one, never kept.
    if (generation !== started) return added
    if (entries.size >= max) drop(entries.values().next().value!)
    entries.set(id, added)
    idOfKey.set(source.keyOf(added), id)
    return added
  }

  return {
    /**
     * The live image with this id, or undefined: at once on a hit (or an expired entry), a promise on a miss (one
     * lookup however many requests miss the same id meanwhile).
     */
    get(id: string): LiveImage | undefined | Promise<LiveImage | undefined> {
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
      const waiting = inFlight.get(id)
      if (waiting) return waiting
      const loading = load(id).finally(() => {
        if (inFlight.get(id) === loading) inFlight.delete(id)
      })
      inFlight.set(id, loading)
      return loading
    },
    /** `n` views of this image were written to its row by the view flush, which does not drop the entry (service.ts). */
    viewsWritten(id: string, n: number) {
      // A lookup in flight may have read the count from before the flush.
      changed()
      const entry = entries.get(id)
      if (entry) entry.views += n
    },
    has: (id: string) => entries.has(id),
    get size() {
      return entries.size
    },
  }
}
