import { Database } from 'bun:sqlite'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { SQL } from 'bun'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { Config } from '../config'
import { type Db, openDatabase } from '../db/client'
import { lockDataDir } from '../db/lock'
import { closePgDatabase, openPgDatabase } from '../db/pg'
import * as sqliteTables from '../db/schema-sqlite'
import type { Storage } from '../storage'
import { VERSION } from '../version'
import { backup, type OnProgress, restoreLocked } from './backup'

/** The upgrade's migrations failed (or left a broken database); the data directory holds the backup again. */
export class UpgradeFailedError extends Error {}

export interface UpgradeResult {
  version: string
  /** Migrations applied by this run (0: the database was up to date). */
  applied: number
  /** The backup taken before migrating (SQLite); null on PostgreSQL and for a new data directory. */
  backup: string | null
}

/** Migrations recorded in a SQLite file (drizzle's table); 0 before the first. */
function sqliteMigrations(file: string): number {
  const db = new Database(file, { readonly: true })
  try {
    return (db.query('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }).n
  } catch {
    return 0
  } finally {
    db.close()
  }
}

/** Migrations recorded in a PostgreSQL database (drizzle's schema); 0 before the first. */
async function pgMigrations(url: string): Promise<number> {
  const client = new SQL(url)
  try {
    const [row] = await client.unsafe('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations')
    return Number(row.n)
  } catch {
    return 0
  } finally {
    await client.close()
  }
}

/** A database the migrations left unusable is a failed upgrade too, though every statement ran. */
function verify(sqlite: Database) {
  const broken = sqlite.query('PRAGMA foreign_key_check').all() as { table: string }[]
  if (broken.length > 0)
    throw new Error(`foreign keys broken in ${[...new Set(broken.map((row) => row.table))].join(', ')}`)
  const quick = sqlite.query('PRAGMA quick_check').get() as Record<string, string>
  if (Object.values(quick)[0] !== 'ok') throw new Error(`quick_check: ${Object.values(quick)[0]}`)
}

/**
 * Brings a stopped server's database to this version's schema, the step between installing a new version and starting
 * it. On SQLite a full backup (src/ops/backup.ts) is taken first, of the database as the old version left it; if a
 * migration fails, or leaves broken foreign keys or a damaged file, that backup is restored and UpgradeFailedError
 * thrown. On PostgreSQL the migrations run in one transaction, which a failure rolls back: no backup of ours (take a
 * pg_dump, as before any PostgreSQL upgrade). Refused while a server holds the data directory (DataDirLockedError).
 */
export async function upgrade(opts: {
  config: Config
  storage: () => Storage
  /** Where the backup goes; default DATA_DIR/backups/before-<version>-<time>.tar. */
  backupTo?: string
  onProgress?: OnProgress
}): Promise<UpgradeResult> {
  const { dataDir, sqliteFile } = opts.config.paths
  await mkdir(dataDir, { recursive: true })
  const lock = lockDataDir(dataDir, 'upgrade refused')
  try {
    const url = opts.config.database.url
    if (url) {
      const before = await pgMigrations(url)
      await closePgDatabase(await openPgDatabase(url))
      return { version: VERSION, applied: (await pgMigrations(url)) - before, backup: null }
    }
    if (!(await Bun.file(sqliteFile).exists())) {
      openDatabase(sqliteFile).$client.close()
      return { version: VERSION, applied: sqliteMigrations(sqliteFile), backup: null }
    }
    return await upgradeSqlite(opts, sqliteFile)
  } finally {
    lock.release()
  }
}

async function upgradeSqlite(opts: Parameters<typeof upgrade>[0], file: string): Promise<UpgradeResult> {
  const { dataDir } = opts.config.paths
  const before = sqliteMigrations(file)
  const stamp = new Date().toISOString().replaceAll(/[:.]/g, '-')
  const target = opts.backupTo ?? join(dataDir, 'backups', `before-${VERSION}-${stamp}.tar`)
  // The file as the old version left it, opened without migrating (openDatabase would migrate it first).
  const old = new Database(file)
  try {
    await backup({
      db: drizzle(old, { schema: sqliteTables }) as unknown as Db,
      storage: opts.storage(),
      dataDir,
      target,
      onProgress: opts.onProgress,
    })
  } finally {
    old.close()
  }
  try {
    const migrated = openDatabase(file)
    try {
      verify(migrated.$client)
    } finally {
      migrated.$client.close()
    }
  } catch (error) {
    await restoreLocked({ source: target, dataDir, storage: opts.storage })
    // drizzle wraps SQLite's error ("Failed to run the query ..."): its cause says what was wrong.
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ''
    const reason = `${error instanceof Error ? error.message.trim() : String(error)}${cause}`
    throw new UpgradeFailedError(
      `upgrade to ${VERSION} failed (${reason}); the data directory was restored from ${target}, as before the upgrade`,
    )
  }
  return { version: VERSION, applied: sqliteMigrations(file) - before, backup: target }
}
