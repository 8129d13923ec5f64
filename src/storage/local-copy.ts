import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { randomToken } from '../lib/crypto'
import { originalKey, type Storage } from './index'

/**
 * Runs `use` on a local copy of an image's original (in `tmpDir`; the media workers decode paths, and the store may be
 * a bucket), removed afterwards whatever happens. Throws when the original is missing or cannot be read.
 */
export async function withLocalOriginal<T>(
  storage: Storage,
  tmpDir: string,
  image: { id: string; ext: string },
  use: (path: string) => Promise<T>,
): Promise<T> {
  const tmpPath = join(tmpDir, `original-${image.id}-${randomToken(6)}.${image.ext}`)
  try {
    const original = storage.file(originalKey(image.id, image.ext))
    if (!(await original.exists())) throw new Error('original file missing')
    mkdirSync(tmpDir, { recursive: true })
    await Bun.write(tmpPath, original)
    return await use(tmpPath)
  } finally {
    await rm(tmpPath, { force: true })
  }
}
