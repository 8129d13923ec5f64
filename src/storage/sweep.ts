import { rm } from 'node:fs/promises'
import type { Db } from '../db/client'
import { images } from '../db/schema'
import { originalKey, thumbnailKey, type Storage } from './index'

/**
 * Startup sweep: uploads write files before their row, so a crash can leave files without a row.
 * Those, and every leftover temp file, are removed; rows are never touched here.
 * It runs before the server listens and the data directory belongs to this one process, so nothing can be writing:
 * every temp file is a leftover whatever its age (the local disk's `.partial` copies, which `list` does not show as
 * keys, included).
 */
export async function sweepOrphans(db: Db, storage: Storage, tmpDir: string) {
  const known = new Set<string>()
  for (const row of db.select({ id: images.id, ext: images.ext }).from(images).all()) {
    known.add(originalKey(row.id, row.ext))
    known.add(thumbnailKey(row.id))
  }
  let removed = (await storage.removeLeftovers?.()) ?? 0
  try {
    for await (const key of storage.list()) {
      if (!known.has(key)) {
        await storage.delete(key)
        removed++
      }
    }
  } catch (error) {
    // An object store that is down must not keep the service from starting: orphans wait for the next sweep.
    console.error(JSON.stringify({ level: 'warn', msg: 'startup sweep skipped: storage unavailable', error: String(error) }))
  }
  await rm(tmpDir, { recursive: true, force: true })
  return removed
}
