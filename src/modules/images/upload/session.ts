import { rm } from 'node:fs/promises'
import type { ReceivedFile } from '../../../http/multipart'
import { type Storage, type StorageKey, StorageKeyTakenError } from '../../../storage'

/** Where a session records the image ids it is about to store under, and forgets them (intents.ts). */
export interface IntentLog {
  record(id: string, ext: string): Promise<void>
  drop(ids: string[]): Promise<unknown>
}

/**
 * What one upload made on disk and in the store, so that no path of it can forget any: the received temp files, the
 * thumbnails made beside them and the keys it stored. `end` (in a `finally`) removes the temp files always (a stored
 * original is its own copy) and the stored keys unless the commit step marked the session committed: all or nothing.
 */
export interface UploadSession {
  /**
   * Records, before any of its files is stored, that this upload stores an image under `id`: if the process dies
   * before the commit, the next start finds the intent and removes the files (intents.ts).
   */
  intend(id: string, ext: string): Promise<void>
  /** The ids this upload recorded intents for: the commit drops them in its transaction. */
  intents(): string[]
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
export function openUploadSession(storage: Storage, files: ReceivedFile[], intentLog: IntentLog): UploadSession {
  const temps = files.map((f) => f.path)
  const keys: StorageKey[] = []
  const intended: string[] = []
  let committed = false
  return {
    async intend(id, ext) {
      await intentLog.record(id, ext)
      intended.push(id)
    },
    intents: () => intended,
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
      if (!committed) {
        const removed = await Promise.all(
          keys.map((key) =>
            storage.delete(key).then(
              () => true,
              () => false,
            ),
          ),
        )
        // A removal that failed keeps the intents: the next start, or the hourly sweep, removes the files.
        if (removed.every(Boolean)) await intentLog.drop(intended).catch(() => {})
      }
      await Promise.all(temps.map((path) => rm(path, { force: true })))
    },
  }
}
