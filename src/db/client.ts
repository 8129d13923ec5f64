import { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { join } from 'node:path'
import * as schema from './schema'

const migrationsFolder = join(import.meta.dir, 'migrations')

/** Opens (creating if needed) the SQLite file, sets the pragmas the service relies on and applies migrations. */
export function openDatabase(path: string) {
  const sqlite = new Database(path, { create: true, strict: true })
  sqlite.exec('PRAGMA journal_mode = WAL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  sqlite.exec('PRAGMA busy_timeout = 5000')
  // WAL makes NORMAL durable against application crashes; only an OS crash can lose the last commits.
  sqlite.exec('PRAGMA synchronous = NORMAL')
  const db = drizzle(sqlite, { schema })
  migrate(db, { migrationsFolder })
  return db
}

export type Db = ReturnType<typeof openDatabase>

export function closeDatabase(db: Db) {
  db.$client.close()
}
