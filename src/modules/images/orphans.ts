import type { Db } from '../../db/client'
import { originalKey, type Storage, thumbnailKey } from '../../storage'
import { removeStrayFiles, type SweepOptions } from '../../storage/sweep'
import { storedVariantKeys } from '../variants/repository'
import { storedImages } from './repository'

/**
 * Uploads write files before their row, so a crash (or a failed delete) can leave files without a row. Those, and
 * leftover temp files, are removed once older than the grace period; rows are never touched here. Runs at startup
 * and every SWEEP_INTERVAL_MS, beside uploads in progress, which the grace period keeps safe.
 */
export async function sweepOrphans(db: Db, storage: Storage, tmpDir: string, opts: SweepOptions = {}) {
  const known = new Set<string>()
  for (const row of await storedImages(db)) {
    known.add(originalKey(row.id, row.ext))
    known.add(thumbnailKey(row.id))
  }
  for (const key of await storedVariantKeys(db)) known.add(key)
  return removeStrayFiles(storage, tmpDir, known, opts)
}
