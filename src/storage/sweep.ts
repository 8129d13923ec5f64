import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { HOUR_MS } from '../lib/time'
import { log } from '../log'
import { listInBatches, type Storage, type StorageKey } from './index'

/**
 * Files written less than this long ago are never swept: they may belong to an upload still under way (its temp
 * files, or files stored just before its row). 24 hours is longer than any upload lasts: a resumable (tus) upload
 * expires 24 hours after its creation, and a multipart one ends when its body does (Bun closes a connection idle
 * for 10 s), which at the largest request (15 files of 50 MB) means sending under 9 KB/s for a whole day.
 */
export const SWEEP_GRACE_MS = 24 * HOUR_MS
/** Orphans younger than the grace outlive a startup sweep, so the sweep runs on an interval too. */
export const SWEEP_INTERVAL_MS = HOUR_MS

export interface SweepOptions {
  /** Files written less than this long ago are left alone (tests shorten it). */
  graceMs?: number
  now?: number
}

/**
 * Keys listed per lookup of which are kept: bounds the memory and each query, whatever the store holds. The lookups
 * run beside the event loop (the server's read Workers on SQLite), so a larger batch costs it nothing and saves trips
 * (at 1M rows: 100 a batch 36-40 s, 250 29-30 s, each loop turn under 15 ms).
 */
const LIST_BATCH = 250

/**
 * Removes stored keys that `keptAmong` does not keep (asked a batch of listed keys at a time) and leftover temp files,
 * once older than the grace period. Knows no table: the images feature says which keys are kept (images/orphans.ts).
 */
export async function removeStrayFiles(
  storage: Storage,
  tmpDir: string,
  keptAmong: (keys: StorageKey[]) => Promise<Set<StorageKey>>,
  opts: SweepOptions = {},
) {
  const writtenBefore = (opts.now ?? Date.now()) - (opts.graceMs ?? SWEEP_GRACE_MS)
  let removed = (await storage.removeLeftovers?.(writtenBefore)) ?? 0
  const sweep = async (batch: StorageKey[]) => {
    const kept = await keptAmong(batch)
    for (const key of batch) {
      if (kept.has(key)) continue
      // Asked after it was listed: a young file may be an upload's whose row is not committed yet.
      const info = await storage.stat(key)
      if (!info || info.modifiedAt >= writtenBefore) continue
      await storage.delete(key)
      removed++
    }
  }
  try {
    await listInBatches(storage, LIST_BATCH, sweep)
  } catch (error) {
    // An object store that is down must not keep the service from starting: orphans wait for the next sweep.
    log.warn('orphan sweep skipped: storage unavailable', { error: String(error) })
  }
  for (const name of await readdir(tmpDir).catch(() => [] as string[])) {
    const path = join(tmpDir, name)
    const info = await stat(path).catch(() => null)
    if (!info || info.mtimeMs >= writtenBefore) continue
    await rm(path, { recursive: true, force: true })
    removed++
  }
  return removed
}
