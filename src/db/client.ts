import { Database } from 'bun:sqlite'
import { closeSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { isBusy } from './errors'
import * as schema from './schema'

const migrationsFolder = join(import.meta.dir, 'migrations')

/**
 * How long a statement of the server waits for another connection's write lock: synchronously, on the event loop,
 * so only a few ms (a lock held by another process answers 503 instead of stalling every request). Tools (the CLI)
 * wait longer: they have no event loop to hold up.
 */
export const SERVER_BUSY_TIMEOUT_MS = 5
const TOOL_BUSY_TIMEOUT_MS = 5000
/** Pauses between tries of a write that met a held lock: about 2 s in all, spent off the event loop. */
const BUSY_RETRY_DELAYS_MS = [50, 100, 200, 350, 500, 800] as const

/**
 * Creates a file readable by its owner only (a database holds password and key hashes), unless it exists. SQLite gives
 * the `-wal` and `-shm` files it creates beside a database the database file's mode.
 */
export function createPrivateFile(path: string) {
  closeSync(openSync(path, 'a', 0o600))
}

/** Opens (creating if needed) the SQLite file, sets the pragmas the service relies on and applies migrations. */
export function openDatabase(path: string, opts: { busyTimeoutMs?: number } = {}) {
  createPrivateFile(path)
  const sqlite = new Database(path, { create: true, strict: true })
  sqlite.exec('PRAGMA journal_mode = WAL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  sqlite.exec(`PRAGMA busy_timeout = ${opts.busyTimeoutMs ?? TOOL_BUSY_TIMEOUT_MS}`)
  // WAL makes NORMAL durable against application crashes; only an OS crash can lose the last commits.
  sqlite.exec('PRAGMA synchronous = NORMAL')
  const db = drizzle(sqlite, { schema })
  migrate(db, { migrationsFolder })
  return db
}

export type Db = ReturnType<typeof openDatabase>
/** The handle a `db.transaction` callback gets: writes that must commit together take it. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

export function closeDatabase(db: Db) {
  db.$client.close()
}

/**
 * Runs a synchronous write, and when another connection holds the lock, runs it again after each delay in turn,
 * waiting asynchronously (the event loop keeps serving); the last busy error is thrown.
 */
export async function retryBusy<T>(write: () => T, delays: readonly number[] = BUSY_RETRY_DELAYS_MS): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return write()
    } catch (error) {
      if (!isBusy(error) || attempt >= delays.length) throw error
      await Bun.sleep(delays[attempt])
    }
  }
}
