import { rm } from 'node:fs/promises'
import type { ReceivedFile } from '../../../http/multipart'
import { type Storage, type StorageKey, StorageKeyTakenError } from '../../../storage'

/**
 * What one upload made on disk and in the store, so that no path of it can forget any: the received temp files, the
 * thumbnails made beside them and the keys it stored. `end` (in a `finally`) removes the temp files always (a stored
 * original is its own copy) and the stored keys unless the commit step marked the session committed: all or nothing.
 */
export interface UploadSession {
  /** A temp file this upload made (a thumbnail), removed at the end whatever happens. */
  temp(path: string): string
  /** Stores `path` under `key` as this upload's own. */
  put(key: StorageKey, path: string): Promise<void>
  /** Removes a key this upload stored, now (an id given up); a key it does not own is left alone. */
  remove(key: StorageKey): Promise<void>
  /** The rows are committed: the stored keys are theirs now and stay. */
  committed(): void
  /** Removes the temp files, and the stored keys unless committed. */
  end(): Promise<void>
}

/** The session of an upload whose received files are `files` (they are its temp files from now on). */
export function openUploadSession(storage: Storage, files: ReceivedFile[]): UploadSession {
  const temps = files.map((f) => f.path)
  const keys: StorageKey[] = []
  let committed = false
  return {
    temp(path) {
      temps.push(path)
      return path
    },
    async put(key, path) {
      // Listed before the put, so a put that fails half-way (or whose answer was lost) is removed too.
      keys.push(key)
      try {
        await storage.put(key, path)
      } catch (error) {
        // Someone else's object: never ours to remove.
        if (error instanceof StorageKeyTakenError) keys.splice(keys.lastIndexOf(key), 1)
        throw error
      }
    },
    async remove(key) {
      const at = keys.lastIndexOf(key)
      if (at === -1) return
      keys.splice(at, 1)
      await storage.delete(key)
    },
    committed() {
      committed = true
    },
    async end() {
      if (!committed) await Promise.all(keys.map((key) => storage.delete(key).catch(() => {})))
      await Promise.all(temps.map((path) => rm(path, { force: true })))
    },
  }
}
