import { rm } from 'node:fs/promises'
import type { Db } from '../db/client'
import { images } from '../db/schema'
import type { Storage } from './index'

/**
 * Startup sweep: uploads write files before their row, so a crash can leave files without a row.
 * Those, and every leftover temp file, are removed; rows are never touched here.
 */
export async function sweepOrphans(db: Db, storage: Storage, tmpDir: string) {
  const known = new Set<string>()
  for (const row of db.select({ id: images.id, ext: images.ext }).from(images).all()) {
    known.add(`originals/${row.id}.${row.ext}`)
    known.add(`thumbs/${row.id}.webp`)
  }
  let removed = 0
  for await (const key of storage.list()) {
    if (!known.has(key)) {
      await storage.delete(key)
      removed++
    }
  }
  await rm(tmpDir, { recursive: true, force: true })
  return removed
}
