import { mkdirSync, statSync } from 'node:fs'
import { readdir, rename, rm, copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { checkKey, type Storage } from './index'

/** Files under `<root>/originals` and `<root>/thumbs`, written by rename so a reader never sees half a file. */
export function createLocalStorage(root: string): Storage {
  for (const dir of ['originals', 'thumbs']) mkdirSync(join(root, dir), { recursive: true })
  const pathOf = (key: string) => join(root, checkKey(key))

  return {
    async put(key, localPath) {
      const target = pathOf(key)
      try {
        await rename(localPath, target)
      } catch (error) {
        // Temp files on another file system cannot be renamed: copy next to the target, then rename.
        if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error
        await copyFile(localPath, `${target}.partial`)
        await rename(`${target}.partial`, target)
        await rm(localPath, { force: true })
      }
    },
    file: (key) => Bun.file(pathOf(key)),
    async stat(key) {
      // Synchronous on purpose: a stat of a local file takes microseconds, while the promise version's thread-pool
      // round trip cut /cdn throughput about threefold (bench/README.md).
      try {
        return { size: statSync(pathOf(key)).size }
      } catch {
        return null
      }
    },
    exists: (key) => Bun.file(pathOf(key)).exists(),
    async delete(key) {
      await rm(pathOf(key), { force: true })
    },
    async *list() {
      for (const dir of ['originals', 'thumbs']) {
        for (const name of await readdir(join(root, dir))) {
          const key = `${dir}/${name}`
          try {
            yield checkKey(key)
          } catch {
            // Not a name this service writes (e.g. a stray `.partial`): not ours to list.
          }
        }
      }
    },
  }
}
