import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { createPrivateFile } from './client'
import { isBusy } from './errors'

const LOCK_FILE = 'server.lock'

/** Another process (a running server, or a restore) holds the data directory. */
export class DataDirLockedError extends Error {}

/**
 * Takes the data directory for this process: an exclusive SQLite lock (fcntl) on `DATA_DIR/server.lock`, held until
 * `release` or the process's end, however it ends (the OS drops the locks of a dead process, kill -9 included, so no
 * stale lock is ever left; a PID file would be, and in a container every server is PID 1). A second server, or a
 * restore, on the same directory gets DataDirLockedError at once. The file itself holds nothing.
 */
export function lockDataDir(dataDir: string, purpose: string) {
  const path = join(dataDir, LOCK_FILE)
  createPrivateFile(path)
  const lock = new Database(path)
  try {
    lock.exec('PRAGMA busy_timeout = 0')
    lock.exec('BEGIN EXCLUSIVE')
  } catch (error) {
    lock.close()
    if (!isBusy(error)) throw error
    throw new DataDirLockedError(
      `${purpose}: DATA_DIR ${dataDir} is in use by a running imghost server (it holds ${path}); stop it first, or use another DATA_DIR`,
    )
  }
  return {
    release() {
      lock.close()
    },
  }
}
