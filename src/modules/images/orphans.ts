import type { Db } from '../../db/client'
import { originalKey, type Storage, type StorageKey, thumbnailKey } from '../../storage'
import { removeStrayFiles, type SweepOptions } from '../../storage/sweep'
import { forgetOrphanVariants, variantsAmong } from '../variants/repository'
import type { ListReads } from './list-reads'
import { isImageId } from './model'
import { imagesAmong } from './repository'

/** Which rows among some ids exist, and their extensions: on the server, through its list reads (reads.ts). */
export type StoredAmong = ListReads['storedAmong']

/** The id a key of an original or a thumbnail names (`originals/<id>.<ext>`, `thumbs/<id>.webp`), if any. */
const idOf = (key: StorageKey) => /^(?:originals|thumbs)\/([^.]+)\./.exec(key)?.[1]

/**
 * Which of a batch of stored keys belong to a row: the files of the images among them (the original under the row's
 * own extension, and the thumbnail) and the stored variants'. Two lookups by key, whatever the library's size.
 */
export function keptAmong(db: Db, storedAmong: StoredAmong = (ids) => imagesAmong(db, ids)) {
  return async (keys: StorageKey[]): Promise<Set<StorageKey>> => {
    const ids = [...new Set(keys.map(idOf).filter((id): id is string => id !== undefined && isImageId(id)))]
    const kept = new Set<StorageKey>()
    for (const row of ids.length === 0 ? [] : await storedAmong(ids))
      kept.add(originalKey(row.id, row.ext)).add(thumbnailKey(row.id))
    for (const key of await variantsAmong(
      db,
      keys.filter((k) => k.startsWith('variants/')),
    ))
      kept.add(key)
    return kept
  }
}

/**
 * Uploads write files before their row, so a crash (or a failed delete) can leave files without a row. Those, and
 * leftover temp files, are removed once older than the grace period; rows are never touched here. Runs after startup
 * (in the background: it walks every stored file) and every SWEEP_INTERVAL_MS, beside uploads in progress, which the
 * grace period keeps safe. The store is listed a batch at a time, each batch looked up by key (the images' rows by
 * `storedAmong`: the server's list reads, off its event loop on SQLite).
 */
export async function sweepOrphans(
  db: Db,
  storage: Storage,
  tmpDir: string,
  opts: SweepOptions = {},
  storedAmong?: StoredAmong,
) {
  await forgetOrphanVariants(db)
  return removeStrayFiles(storage, tmpDir, keptAmong(db, storedAmong), opts)
}
