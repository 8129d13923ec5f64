import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Db } from '../db/client'
import type { Media } from '../media'
import { formatFromExt } from '../media/formats'
import { storedImages } from '../modules/images/repository'
import { storedVariantKeys } from '../modules/variants/repository'
import { originalKey, type Storage, thumbnailKey } from '../storage'

export interface CheckReport {
  images: number
  missingOriginals: string[]
  missingThumbnails: string[]
  strayFiles: string[]
  repairedThumbnails: string[]
  removedStrayFiles: string[]
}

/**
 * Verifies that every image row has its original and thumbnail and every file a row. With `repair`, missing
 * thumbnails are made again from the original and stray files are removed; a missing original cannot be repaired.
 */
export async function checkIntegrity(opts: {
  db: Db
  storage: Storage
  media: Media
  repair: boolean
}): Promise<CheckReport> {
  const { storage } = opts
  const rows = await storedImages(opts.db)
  const report: CheckReport = {
    images: rows.length,
    missingOriginals: [],
    missingThumbnails: [],
    strayFiles: [],
    repairedThumbnails: [],
    removedStrayFiles: [],
  }
  const known = new Set<string>()
  const work = await mkdtemp(join(tmpdir(), 'imghost-check-'))
  try {
    for (const row of rows) {
      const original = originalKey(row.id, row.ext)
      const thumb = thumbnailKey(row.id)
      known.add(original).add(thumb)
      const hasOriginal = await storage.exists(original)
      if (!hasOriginal) report.missingOriginals.push(original)
      if (await storage.exists(thumb)) continue
      report.missingThumbnails.push(thumb)
      const format = formatFromExt(row.ext)
      if (!opts.repair || !hasOriginal || !format) continue
      const source = join(work, `${row.id}.${row.ext}`)
      const target = join(work, `${row.id}.webp`)
      await Bun.write(source, storage.file(original))
      await opts.media.thumbnail(source, target)
      await storage.put(thumb, target)
      report.repairedThumbnails.push(thumb)
    }
    // Variants are not checked (a missing one is made again on request); only theirs are not strays.
    for (const key of await storedVariantKeys(opts.db)) known.add(key)
    for await (const key of storage.list()) {
      if (known.has(key)) continue
      report.strayFiles.push(key)
      if (opts.repair) {
        await storage.delete(key)
        report.removedStrayFiles.push(key)
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
  return report
}
