import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { byEngine, type Db } from '../db/client'
import { countRows } from '../db/copy'
import type { Media } from '../media'
import { formatFromExt } from '../media/formats'
import { recountAlbumCounts } from '../modules/albums/repository'
import { accountIdsAfter } from '../modules/auth/repository'
import { recountImageCounts } from '../modules/images/counts'
import { keptAmong } from '../modules/images/orphans'
import { imagesAfter } from '../modules/images/repository'
import { forgetOrphanVariants } from '../modules/variants/repository'
import { listInBatches, originalKey, type Storage, type StorageKey, thumbnailKey } from '../storage'

export interface CheckReport {
  images: number
  missingOriginals: string[]
  missingThumbnails: string[]
  strayFiles: string[]
  repairedThumbnails: string[]
  removedStrayFiles: string[]
  /** Days of the image counts (image_counts) that differed from a recount of the rows; repaired with `repair`. */
  wrongCountDays: number
  repairedCountDays: number
  /** Albums whose counts (image_count, public_count) differed from a recount of their images. */
  wrongAlbumCounts: number
  repairedAlbumCounts: number
}

/** Rows read, and stored keys looked up, per batch: the check's memory stays the same whatever the library's size. */
const BATCH = 500

/**
 * Verifies that every image row has its original and thumbnail, every file a row, and the image counts a recount of
 * the rows. With `repair`, missing thumbnails are made again from the original, stray files are removed and wrong
 * counts rewritten; a missing original cannot be repaired. Rows are walked by id and files as the store lists them, a
 * batch at a time.
 */
export async function checkIntegrity(opts: {
  db: Db
  storage: Storage
  media: Media
  repair: boolean
  /** Told after each image's files are looked at: `done` of the images counted at the start. */
  onProgress?: (done: number, total: number) => void
}): Promise<CheckReport> {
  const { storage } = opts
  const report: CheckReport = {
    images: 0,
    missingOriginals: [],
    missingThumbnails: [],
    strayFiles: [],
    repairedThumbnails: [],
    removedStrayFiles: [],
    wrongCountDays: 0,
    repairedCountDays: 0,
    wrongAlbumCounts: 0,
    repairedAlbumCounts: 0,
  }
  const work = await mkdtemp(join(tmpdir(), 'imghost-check-'))
  try {
    const total = await imageRows(opts.db)
    for (let after = ''; ; ) {
      const rows = await imagesAfter(opts.db, after, BATCH)
      for (const row of rows) {
        await checkFiles(row, opts, report, work)
        opts.onProgress?.(++report.images, Math.max(total, report.images))
      }
      if (rows.length < BATCH) break
      after = rows.at(-1)!.id
    }
    // Variants are not checked (a missing one is made again on request); only theirs are not strays.
    await forgetOrphanVariants(opts.db)
    const kept = keptAmong(opts.db)
    const strays = async (batch: StorageKey[]) => {
      const known = await kept(batch)
      for (const key of batch) {
        if (known.has(key)) continue
        report.strayFiles.push(key)
        if (!opts.repair) continue
        await storage.delete(key)
        report.removedStrayFiles.push(key)
      }
    }
    await listInBatches(storage, BATCH, strays)
  } finally {
    await rm(work, { recursive: true, force: true })
  }
  const counts = await recountImageCounts(opts.db, (after, limit) => accountIdsAfter(opts.db, after, limit), {
    repair: opts.repair,
  })
  report.wrongCountDays = counts.wrongDays
  report.wrongAlbumCounts = await recountAlbumCounts(opts.db, { repair: opts.repair })
  if (opts.repair) {
    report.repairedCountDays = report.wrongCountDays
    report.repairedAlbumCounts = report.wrongAlbumCounts
  }
  return report
}

/** The rows the check walks, for its progress (counted with the others by src/db/copy.ts, which owns every table). */
const imageRows = async (db: Db) =>
  (
    await byEngine(db, {
      sqlite: (sqlite) => countRows({ engine: 'sqlite', db: sqlite }),
      pg: (pg) => countRows({ engine: 'pg', db: pg }),
    })
  ).images

/** One row's files: reported when missing, its thumbnail made again from the original with `repair`. */
async function checkFiles(
  row: { id: string; ext: string },
  opts: { storage: Storage; media: Media; repair: boolean },
  report: CheckReport,
  work: string,
) {
  const { storage } = opts
  const original = originalKey(row.id, row.ext)
  const thumb = thumbnailKey(row.id)
  const hasOriginal = await storage.exists(original)
  if (!hasOriginal) report.missingOriginals.push(original)
  if (await storage.exists(thumb)) return
  report.missingThumbnails.push(thumb)
  const format = formatFromExt(row.ext)
  if (!opts.repair || !hasOriginal || !format) return
  const source = join(work, `${row.id}.${row.ext}`)
  const target = join(work, `${row.id}.webp`)
  await Bun.write(source, storage.file(original))
  await opts.media.thumbnail(source, target)
  await storage.put(thumb, target)
  report.repairedThumbnails.push(thumb)
}
