import type { Db } from '../../db/client'
import type { Exclusive } from '../../db/jobs'
import { log } from '../../log'
import type { Media } from '../../media'
import type { Storage } from '../../storage'
import { withLocalOriginal } from '../../storage/local-copy'
import { phashTodo, recordPhash } from './repository'

export interface PhashBackfillDeps {
  db: Db
  storage: Storage
  /** The worker pool: decoding an original never runs on the event loop. */
  media: Media
  /** Where originals are copied for decoding. */
  tmpDir: string
  /** The background run by one instance at a time (src/db/jobs.ts); unset: it always runs. */
  exclusive?: Exclusive
}

export interface PhashBackfillOptions {
  /** Images per batch; default 20. */
  batchSize?: number
  /** Pause between two batches of the background run, so a backlog never crowds out uploads; default 1 s. */
  pauseMs?: number
}

/** What a batch (or a whole run) did: hashed, too plain to hash (null, marked tried), unreadable (retried next run). */
export interface BackfillCounts {
  hashed: number
  plain: number
  failed: number
}

const none = (c: BackfillCounts) => c.hashed + c.plain + c.failed === 0
const add = (a: BackfillCounts, b: BackfillCounts) => {
  a.hashed += b.hashed
  a.plain += b.plain
  a.failed += b.failed
}

/**
 * Gives a perceptual hash to the live images stored before hashes existed (migration 0008: `phash` NULL), so blocking
 * them blocks the picture and `duplicateOf` can name them. A picture too plain to hash keeps `phash` null (the
 * blocklist reads null as "no hash") and gets `phashTried`, so it is tried once, not at every start. An image whose
 * original cannot be read is skipped for this run only (the store may be down): the next start tries it again.
 *
 * Batches never overlap: `step` waits for the batch running, the background run's or another caller's.
 */
export function createPhashBackfill(deps: PhashBackfillDeps, opts: PhashBackfillOptions = {}) {
  const batchSize = opts.batchSize ?? 20
  const pauseMs = opts.pauseMs ?? 1000
  // The run's cursor: ids come in order, so a row whose original cannot be read is passed once per run (a bounded query
  // whatever fails, and no retry loop while the store is down).
  let afterId = ''
  const total: BackfillCounts = { hashed: 0, plain: 0, failed: 0 }
  let running: Promise<BackfillCounts> = Promise.resolve({ hashed: 0, plain: 0, failed: 0 })
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false

  async function batch(): Promise<BackfillCounts> {
    const counts: BackfillCounts = { hashed: 0, plain: 0, failed: 0 }
    for (const image of await phashTodo(deps.db, batchSize, afterId)) {
      if (stopped) break
      afterId = image.id
      let phash: string | null
      try {
        phash = await withLocalOriginal(deps.storage, deps.tmpDir, image, (path) => deps.media.perceptualHash(path))
      } catch (error) {
        counts.failed++
        log.warn('phash backfill: cannot hash image', { id: image.id, error: String(error) })
        continue
      }
      // Checked right before the write: after stop() no write starts (stop() waits for this batch, then the database
      // may be closed).
      if (stopped) break
      await recordPhash(deps.db, image.id, phash)
      if (phash) counts.hashed++
      else counts.plain++
    }
    // A pass ends with an empty batch; the next step starts another from the first id.
    if (none(counts)) afterId = ''
    add(total, counts)
    if (!none(counts)) log.info('phash backfill: batch', { ...counts })
    return counts
  }

  /** Hashes the next batch of the pass, after the batch running; all zero when the pass has nothing left. */
  function step(): Promise<BackfillCounts> {
    const next = running.then(batch)
    running = next.catch(() => ({ hashed: 0, plain: 0, failed: 0 }))
    return next
  }

  /** Batches until none is left (`cli rehash`); the counts of them all. */
  async function runToEnd(): Promise<BackfillCounts> {
    const counts: BackfillCounts = { hashed: 0, plain: 0, failed: 0 }
    for (;;) {
      const done = await step()
      if (none(done) || stopped) return counts
      add(counts, done)
    }
  }

  function schedule(delayMs: number) {
    timer = setTimeout(async () => {
      let done: BackfillCounts | undefined
      try {
        done = await (deps.exclusive ?? ((_job, work) => work()))('phash-backfill', step)
      } catch (error) {
        if (!stopped) log.error('phash backfill failed; tried again at the next start', { error: String(error) })
        return
      }
      // Another instance is hashing: it hashes these too.
      if (stopped || !done) return
      if (!none(done)) return schedule(pauseMs)
      // Nothing left: new uploads are hashed as they are stored, so the run ends here until the next start.
      if (!none(total)) log.info('phash backfill: done', { ...total })
    }, delayMs)
    timer.unref?.()
  }

  return {
    step,
    runToEnd,
    /** Starts the background run: batches with a pause between them, until no image is left to hash. */
    start() {
      stopped = false
      schedule(0)
    },
    /** Ends the background run after the image being hashed (a hash is one bounded worker call). */
    async stop() {
      stopped = true
      clearTimeout(timer)
      await running
    },
  }
}
