import { join } from 'node:path'
import { createLocalStorage } from '../storage/local'
import type { S3Storage } from '../storage/s3'

export interface MigrationReport {
  /** Files found on the local disk. */
  files: number
  copied: number
  /** Already in the bucket with the same size (an earlier, interrupted run). */
  skipped: number
  bytesCopied: number
  /** Keys whose upload failed or whose size in the bucket differs after the upload. */
  failed: { key: string; error: string }[]
}

/**
 * Copies every file under `filesDir` (DATA_DIR/files) into the bucket. Resumable: an object that already exists with
 * the same size is skipped; every copy is verified by the object's size in the bucket. Local files are never removed,
 * so switching back stays possible until the operator deletes them.
 */
export async function migrateToBucket(opts: {
  filesDir: string
  target: S3Storage
  concurrency?: number
  onProgress?: (done: number, report: MigrationReport) => void
}): Promise<MigrationReport> {
  const local = createLocalStorage(opts.filesDir)
  const keys: string[] = []
  for await (const key of local.list()) keys.push(key)
  const report: MigrationReport = { files: keys.length, copied: 0, skipped: 0, bytesCopied: 0, failed: [] }

  let next = 0
  let done = 0
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++]
      try {
        const size = (await local.stat(key))?.size
        if (size === undefined) continue // removed since the listing (an image deleted meanwhile)
        if ((await opts.target.stat(key))?.size === size) {
          report.skipped++
        } else {
          await opts.target.upload(key, join(opts.filesDir, key))
          const stored = await opts.target.stat(key)
          if (stored?.size !== size)
            throw new Error(`size in the bucket is ${stored?.size ?? 'missing'}, expected ${size}`)
          report.copied++
          report.bytesCopied += size
        }
      } catch (error) {
        report.failed.push({ key, error: error instanceof Error ? error.message : String(error) })
      }
      opts.onProgress?.(++done, report)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 4, keys.length)) }, worker))
  return report
}
