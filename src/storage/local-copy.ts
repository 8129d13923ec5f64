import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { randomToken } from '../lib/crypto'
import { originalKey, readStored, type Storage, type StorageKey } from './index'

/** An image's original is not in the store (deleted meanwhile, or lost). */
export class OriginalMissingError extends Error {
  constructor(readonly key: StorageKey) {
    super(`original file missing: ${key}`)
    this.name = 'OriginalMissingError'
  }
}

/**
 * Runs `use` on a local file of an image's original (the media workers decode paths): the stored file itself on a
 * local disk (the jobs only read it), else a copy in `tmpDir` (a bucket), removed afterwards whatever happens. Throws
 * OriginalMissingError when it is not stored, StorageUnavailableError when the store cannot be read (with a local
 * disk's own error, a full one, as its cause).
 */
export async function withLocalOriginal<T>(
  storage: Storage,
  tmpDir: string,
  image: { id: string; ext: string },
  use: (path: string) => Promise<T>,
): Promise<T> {
  const key = originalKey(image.id, image.ext)
  if (!(await storage.exists(key))) throw new OriginalMissingError(key)
  const stored = storage.localPath?.(key)
  if (stored) return use(stored)
  const tmpPath = join(tmpDir, `original-${image.id}-${randomToken(6)}.${image.ext}`)
  try {
    mkdirSync(tmpDir, { recursive: true })
    await readStored(`copying ${key} out`, () => Bun.write(tmpPath, storage.file(key)))
    return await use(tmpPath)
  } finally {
    await rm(tmpPath, { force: true })
  }
}
