import { log } from '../log'
import type { Media } from '../media'
import type { Storage } from '../storage'
import { withLocalOriginal } from '../storage/local-copy'
import type { Classifier } from './classifier'
import { withDeadline } from './deadline'
import { isMature, type NsfwThresholds } from './index'

export interface RescanOptions {
  /** Pause between passes, and the first retry delay of an image; default 30 s. */
  intervalMs?: number
  /** Upper bound of an image's retry delay, which doubles after each failed attempt; default 30 min. */
  maxIntervalMs?: number
  /** Deadline of one classify call. */
  timeoutMs?: number
}

/** The images awaiting a verdict and where verdicts go: the images feature's rows, which this module never reads. */
export interface ScanQueue {
  /** Live images whose scan is pending, oldest first. */
  pending(): Promise<{ id: string; ext: string }[]>
  /** Stores the verdict of a still-pending image; a user's own NSFW flag is never cleared. */
  record(id: string, mature: boolean): Promise<void>
}

export interface RescanDeps {
  scans: ScanQueue
  storage: Storage
  media: Media
  classifier: Classifier
  thresholds: NsfwThresholds
  /** Where originals are copied for decoding. */
  tmpDir: string
  /**
   * Runs a pass unless another instance is running one (then: undefined), as src/db/jobs.ts does; unset: every pass
   * runs. This module knows no table.
   */
  exclusive?: <T>(job: string, work: () => Promise<T>) => Promise<T | undefined>
}

/**
 * Retries the content scan of images whose upload-time scan failed or timed out (scanStatus 'pending', hidden from
 * public feeds), until the classifier gives a verdict: then the image is flagged or passed and its status is 'done'.
 *
 * One image at a time, so a backlog never floods the classifier queue. Each image backs off on its own (the delay
 * doubles per failure up to `maxIntervalMs`); a classifier failure also ends the pass, since the next images would
 * most likely fail the same way. Backoff state lives in memory: after a restart every pending image is tried again.
 */
export function createRescanner(deps: RescanDeps, opts: RescanOptions = {}) {
  const intervalMs = opts.intervalMs ?? 30_000
  const maxIntervalMs = Math.max(intervalMs, opts.maxIntervalMs ?? 30 * 60_000)
  const timeoutMs = opts.timeoutMs ?? 15_000
  const { scans, storage, media, classifier } = deps

  const backoff = new Map<string, { failures: number; nextAt: number }>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<PassResult> | null = null
  let stopped = false

  function fail(id: string, now: number) {
    const failures = (backoff.get(id)?.failures ?? 0) + 1
    const delay = Math.min(maxIntervalMs, intervalMs * 2 ** (failures - 1))
    backoff.set(id, { failures, nextAt: now + delay })
    return failures
  }

  /** Scans one image: 'done' with a verdict stored, 'classifier' when the classifier failed, 'image' when its file could not be read. */
  async function rescanOne(image: { id: string; ext: string }): Promise<'done' | 'classifier' | 'image'> {
    let input: Uint8Array
    try {
      input = await withLocalOriginal(storage, deps.tmpDir, image, (path) => media.classifierInput(path))
    } catch (error) {
      log.warn('rescan: cannot read image', { id: image.id, error: String(error) })
      return 'image'
    }
    let mature: boolean
    try {
      mature = isMature(await withDeadline(classifier.classify(input), timeoutMs, 'nsfw rescan'), deps.thresholds)
    } catch (error) {
      log.warn('rescan: classifier failed', { id: image.id, error: String(error) })
      return 'classifier'
    }
    // Checked right before the write: after stop() the database may be closed.
    if (stopped) return 'classifier'
    await scans.record(image.id, mature)
    log.info('rescan: verdict', { id: image.id, nsfw: mature })
    return 'done'
  }

  interface PassResult {
    scanned: number
    failed: number
  }

  /** One pass over the pending images that are due. */
  async function pass(): Promise<PassResult> {
    const result: PassResult = { scanned: 0, failed: 0 }
    if (stopped) return result
    const now = Date.now()
    const pending = await scans.pending()
    const pendingIds = new Set(pending.map((p) => p.id))
    for (const id of backoff.keys()) if (!pendingIds.has(id)) backoff.delete(id)

    for (const image of pending) {
      if (stopped) break
      if ((backoff.get(image.id)?.nextAt ?? 0) > now) continue
      const outcome = await rescanOne(image)
      if (outcome === 'done') {
        backoff.delete(image.id)
        result.scanned++
        continue
      }
      result.failed++
      fail(image.id, Date.now())
      if (outcome === 'classifier') break
    }
    return result
  }

  /** Runs a pass unless one is already running (then waits for that one). */
  function runOnce(): Promise<PassResult> {
    const exclusive = deps.exclusive ?? ((_job, work) => work())
    running ??= exclusive('rescan', pass)
      // Another instance is running a pass: this one has nothing to do now.
      .then((result) => result ?? { scanned: 0, failed: 0 })
      .catch((error) => {
        if (!stopped) log.error('rescan pass failed', { error: String(error) })
        return { scanned: 0, failed: 0 }
      })
      .finally(() => {
        running = null
      })
    return running
  }

  function schedule() {
    if (stopped) return
    timer = setTimeout(async () => {
      await runOnce()
      schedule()
    }, intervalMs)
    timer.unref?.()
  }

  return {
    /** Starts the background passes, the first after one interval. */
    start() {
      stopped = false
      if (timer === undefined) schedule()
    },
    runOnce,
    /** Number of pending images currently backing off (for tests and metrics). */
    get backingOff() {
      return backoff.size
    },
    /** Stops the passes; waits briefly for the running one (a hung classifier call is not waited for). */
    async stop(graceMs = 2000) {
      stopped = true
      clearTimeout(timer)
      timer = undefined
      if (running) {
        let grace: ReturnType<typeof setTimeout> | undefined
        await Promise.race([running, new Promise((r) => (grace = setTimeout(r, graceMs)))])
        clearTimeout(grace)
      }
    },
  }
}
