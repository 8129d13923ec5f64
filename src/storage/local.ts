import { constants, mkdirSync, statSync } from 'node:fs'
import { access, copyFile, link, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { checkKey, type Storage, StorageKeyTakenError, StorageUnavailableError } from './index'
import { walkInWorker } from './walk'

const PARTIAL = '.partial'
const DIRS = ['originals', 'thumbs', 'variants'] as const

/** Files under `<root>/originals`, `<root>/thumbs` and `<root>/variants`, put in by link or rename so a reader never sees half a file. */
export function createLocalStorage(root: string): Storage {
  for (const dir of DIRS) mkdirSync(join(root, dir), { recursive: true })
  const pathOf = (key: string) => join(root, checkKey(key))
  /** A name `put` writes as a temp copy: a valid key plus `.partial`. */
  const isPartial = (key: string) => {
    if (!key.endsWith(PARTIAL)) return false
    try {
      checkKey(key.slice(0, -PARTIAL.length))
      return true
    } catch {
      return false
    }
  }

  return {
    async put(key, localPath, opts = {}) {
      const target = pathOf(key)
      if (opts.replace) {
        await copyFile(localPath, target + PARTIAL)
        await rename(target + PARTIAL, target)
        return
      }
      // A hard link claims the name only if it is free, in one step (no check-then-write race), and copies nothing.
      const claim = (from: string) =>
        link(from, target).catch((error) => {
          throw (error as NodeJS.ErrnoException).code === 'EEXIST' ? new StorageKeyTakenError(key) : error
        })
      try {
        await claim(localPath)
      } catch (error) {
        // Temp files on another file system cannot be linked: copy next to the target, then link that in.
        if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error
        try {
          await copyFile(localPath, target + PARTIAL)
          await claim(target + PARTIAL)
        } finally {
          await rm(target + PARTIAL, { force: true })
        }
      }
    },
    file: (key) => Bun.file(pathOf(key)),
    localPath: pathOf,
    async stat(key) {
      // Synchronous on purpose: a stat of a local file takes microseconds, while the promise version's thread-pool
      // round trip cut /cdn throughput about threefold (bench/README.md).
      try {
        const info = statSync(pathOf(key))
        return { size: info.size, modifiedAt: info.mtimeMs }
      } catch {
        return null
      }
    },
    exists: (key) => Bun.file(pathOf(key)).exists(),
    async probe() {
      // Each directory can be listed, entered and written (a volume gone, or mounted read-only, fails it).
      for (const dir of DIRS) {
        try {
          await access(join(root, dir), constants.R_OK | constants.W_OK | constants.X_OK)
        } catch (error) {
          throw new StorageUnavailableError(`the files directory ${dir}/ cannot be read and written`, { cause: error })
        }
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true })
    },
    // Directories are read by a Worker a batch at a time (walk.ts): a million names are never held at once, and
    // reading them never holds the event loop.
    async *list() {
      for await (const names of walkInWorker(root, DIRS)) {
        for (const key of names) {
          try {
            yield checkKey(key)
          } catch {
            // Not a stored object (a `.partial` copy, someone else's file): not ours to list.
          }
        }
      }
    },
    async removeLeftovers(writtenBefore) {
      let removed = 0
      for await (const names of walkInWorker(root, DIRS)) {
        for (const name of names) {
          if (!isPartial(name)) continue
          const path = join(root, name)
          // A copy still being written is a put in progress.
          if (((await stat(path).catch(() => null))?.mtimeMs ?? 0) >= writtenBefore) continue
          await rm(path, { force: true })
          removed++
        }
      }
      return removed
    },
  }
}
