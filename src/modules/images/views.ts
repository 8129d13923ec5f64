import type { ChangeFeed } from '../../db/changes'
import type { Db } from '../../db/client'
import { isCrawler } from '../../lib/crawlers'
import { prepareAddViews } from './repository'

/**
 * Rows per write: at a million images each is a random row and views-index entry (0.2-0.5 ms apiece, cold; 50 a
 * write held SQLite's event loop up to 24 ms).
 */
const FLUSH_CHUNK = 20

/** Views are counted in memory and written in batches: an UPDATE per view would cut read throughput severalfold. */
export function createViewCounter(deps: {
  db: Db
  changes: ChangeFeed
  /** The live-image cache, whose entries count the written views too. */
  liveCache: { viewsWritten(id: string, n: number): void }
}) {
  const pendingViews = new Map<string, number>()
  const addViews = prepareAddViews(deps.db)
  // One write at a time: a flush that starts while another writes reads the counts that one left (never the same
  // counts twice).
  let writing: Promise<unknown> = Promise.resolve()
  /**
   * Writes the pending counts of `ids` in one transaction. Counts leave the buffer only once it has committed: a
   * failed write (a locked or read-only database) keeps them all for the next flush; views counted while it ran stay.
   */
  function writeViews(ids: string[]): Promise<void> {
    const run = writing.then(async () => {
      const batch: [string, number][] = []
      for (const id of ids) {
        const n = pendingViews.get(id)
        if (n) batch.push([id, n])
      }
      // The counts change nothing a cached entry shows but the count, which it adds below: hot images keep their
      // entries (and /cdn its ready answers) across flushes.
      await deps.changes.quietly('images', () => addViews(batch))
      // Committed: the written counts leave the buffer, and the cached entries count them too.
      for (const [id, n] of batch) {
        const left = (pendingViews.get(id) ?? 0) - n
        if (left > 0) pendingViews.set(id, left)
        else pendingViews.delete(id)
        deps.liveCache.viewsWritten(id, n)
      }
    })
    writing = run.catch(() => {})
    return run
  }

  return {
    /** The views of an image counted but not written yet. */
    pending: (id: string) => pendingViews.get(id) ?? 0,
    /** Drops the unwritten views of a deleted image. */
    forget: (id: string) => pendingViews.delete(id),

    /** Counts a view of the image, unless the User-Agent is a known unfurler or crawler (src/lib/crawlers.ts). */
    countView(id: string, userAgent: string | null = null) {
      if (isCrawler(userAgent)) return
      pendingViews.set(id, (pendingViews.get(id) ?? 0) + 1)
    },

    /** Writes every buffered count at once (shutdown, tests). */
    async flushViews() {
      const ids = [...pendingViews.keys()]
      for (let i = 0; i < ids.length; i += FLUSH_CHUNK) await writeViews(ids.slice(i, i + FLUSH_CHUNK))
    },

    /**
     * The periodic flush: one chunk per event-loop turn, so a large batch never holds the loop longer than one short
     * transaction (at 1M images, 500 rows held it 80 ms, 100 rows 23 ms; bench/README.md).
     */
    async flushViewsGradually() {
      const ids = [...pendingViews.keys()]
      for (let i = 0; i < ids.length; i += FLUSH_CHUNK) {
        if (i > 0) await new Promise((resolve) => setImmediate(resolve))
        await writeViews(ids.slice(i, i + FLUSH_CHUNK))
      }
    },
  }
}
