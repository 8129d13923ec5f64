import { Database, type Statement } from 'bun:sqlite'
import { closeSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { type SQL, sql as sqlText } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { engine } from './engine'
import { isBusy } from './errors'
import type { PgDb } from './pg'
import * as schema from './schema-sqlite'

const migrationsFolder = join(import.meta.dir, 'migrations')

/**
 * How long a statement of the server waits for another connection's write lock: synchronously, on the event loop,
 * so only a few ms (a lock held by another process answers 503 instead of stalling every request). Tools (the CLI)
 * wait longer: they have no event loop to hold up.
 */
export const SERVER_BUSY_TIMEOUT_MS = 5
export const TOOL_BUSY_TIMEOUT_MS = 5000
/** Pauses between tries of a write that met a held lock: about 2 s in all, spent off the event loop. */
const BUSY_RETRY_DELAYS_MS = [50, 100, 200, 350, 500, 800] as const
/**
 * How long the server's PostgreSQL statements wait for a lock before answering 503 busy: as long as its SQLite writes
 * retry (the wait is asynchronous there, no retries needed).
 */
const SERVER_PG_LOCK_TIMEOUT_MS = BUSY_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)

/**
 * Creates a file readable by its owner only (a database holds password and key hashes), unless it exists. SQLite gives
 * the `-wal` and `-shm` files it creates beside a database the database file's mode.
 */
export function createPrivateFile(path: string) {
  closeSync(openSync(path, 'a', 0o600))
}

/**
 * How a connection reads a large database: pages straight from the OS's page cache through a memory map (no copy, no
 * read call per page) up to 1 GiB of file, and 16 MiB of SQLite's own cache (its default, 2 MiB, holds little more than
 * the upper levels of one index at a million rows). Measured at 1M rows: the 8-visitor read rate of the scale bench
 * went from 115-135 to 195-240 reads/s. A read error under the map (a failing disk) ends the process instead of
 * failing one query.
 */
export function tuneReads(sqlite: Database) {
  sqlite.exec('PRAGMA mmap_size = 1073741824')
  sqlite.exec('PRAGMA cache_size = -16384')
}

/** Compiled statements a connection keeps, least recently used dropped first. */
const STATEMENT_CACHE_SIZE = 512

/**
 * drizzle compiles every query it runs anew (sqlite3_prepare: parse and plan, and for a write every trigger it fires:
 * the images insert compiles the search index's), often costing more than running it: about 1.2 ms of an upload's
 * 7-8 ms of fixed server CPU (bench/README.md, "Issue 35, point 8, second pass"). The connection keeps them by their
 * text. Safe because bun:sqlite runs a statement to its end before anything else can use it; a schema change makes
 * SQLite recompile it.
 */
function keepStatements(sqlite: Database) {
  const prepare = sqlite.prepare.bind(sqlite)
  const kept = new Map<string, Statement>()
  sqlite.prepare = ((text: string, ...params: unknown[]) => {
    if (params.length > 0) return prepare(text, ...(params as []))
    let statement = kept.get(text)
    if (statement) kept.delete(text)
    else {
      statement = prepare(text)
      if (kept.size >= STATEMENT_CACHE_SIZE) kept.delete(kept.keys().next().value!)
    }
    kept.set(text, statement)
    return statement
  }) as Database['prepare']
}

/**
 * Opens (creating if needed) the SQLite file, sets the pragmas the service relies on and applies migrations.
 * `serving`: a server's connection, tuned for reads (tuneReads). A tool's (check, backup, restore, migrate-db) is not:
 * it walks the whole file once, and through the map every page it touched counts in its resident memory (`cli check`
 * at a million images peaked at 840 MB against 201 at 10,000), so it reads through SQLite's own small cache instead.
 */
export function openDatabase(path: string, opts: { busyTimeoutMs?: number; serving?: boolean } = {}) {
  createPrivateFile(path)
  const sqlite = new Database(path, { create: true, strict: true })
  sqlite.exec('PRAGMA journal_mode = WAL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  sqlite.exec(`PRAGMA busy_timeout = ${opts.busyTimeoutMs ?? TOOL_BUSY_TIMEOUT_MS}`)
  // WAL makes NORMAL durable against application crashes; only an OS crash can lose the last commits.
  sqlite.exec('PRAGMA synchronous = NORMAL')
  if (opts.serving) tuneReads(sqlite)
  keepStatements(sqlite)
  const db = drizzle(sqlite, { schema })
  migrate(db, { migrationsFolder })
  return db
}

/** SQLite's database as drizzle types it. */
export type SqliteDb = ReturnType<typeof openDatabase>

/**
 * The database the repositories query, whichever engine runs: only the query builders both dialects of drizzle share
 * (select, insert, update, delete), used through awaited builders, steps and `transaction` below. Neither engine's
 * client, raw SQL methods nor drizzle's own `transaction` (synchronous on SQLite, asynchronous on PostgreSQL) are part
 * of it: what differs by engine goes through byEngine, which hands each branch the database under its own engine's
 * type. The builders are typed by SQLite's dialect (src/db/schema.ts types the tables the same way), as PostgreSQL's
 * return the same rows for the same columns (test/db/schema-pg.test.ts, and the whole suite, which runs on both): a
 * union of the two dialects' types would make every query a union whose builders cannot be called.
 */
export type Db = Pick<SqliteDb, SharedBuilders>
type SharedBuilders = 'select' | 'selectDistinct' | 'insert' | 'update' | 'delete'
/** The handle a transaction's body gets: writes that must commit together take it. The same builders as Db. */
export type Tx = Pick<Parameters<Parameters<SqliteDb['transaction']>[0]>[0], SharedBuilders>

/** A database under the shared type, and back under its engine's own (see Db): the casts between them, in one place. */
const asShared = (db: PgDb) => db as unknown as Db
const asPg = (db: Db) => db as unknown as PgDb
const asSqlite = (db: Db) => db as SqliteDb

/**
 * The running engine's branch, with the database under its own engine's type: for what is written differently by
 * engine (a tool's bulk work on the raw client, a query only one dialect has, SQLite's own connection settings).
 */
export function byEngine<T>(db: Db, branches: { sqlite(db: SqliteDb): T; pg(db: PgDb): T }): T {
  return engine === 'pg' ? branches.pg(asPg(db)) : branches.sqlite(asSqlite(db))
}

/**
 * The service's database: PostgreSQL at `databaseUrl` when set (migrated under an advisory lock), else the SQLite file
 * `sqlitePath` (with the server's short busy timeout).
 */
export async function openServiceDatabase(opts: {
  databaseUrl: string
  sqlitePath: string
  busyTimeoutMs?: number
  serving?: boolean
}) {
  // The tables were chosen when the process started (src/db/engine.ts): a configuration must not say otherwise.
  if (!opts.databaseUrl && engine === 'pg') throw new Error('This process runs on PostgreSQL: DATABASE_URL is required')
  if (!opts.databaseUrl)
    return openDatabase(opts.sqlitePath, { busyTimeoutMs: opts.busyTimeoutMs, serving: opts.serving })
  if (engine !== 'pg') throw new Error('DATABASE_URL must be set in the environment the process starts with')
  // Loaded only on PostgreSQL: drizzle's PostgreSQL dialect and driver stay out of a SQLite process.
  const { openPgDatabase } = await import('./pg')
  return asShared(await openPgDatabase(opts.databaseUrl, { lockTimeoutMs: SERVER_PG_LOCK_TIMEOUT_MS }))
}

export async function closeDatabase(db: Db) {
  await byEngine(db, { sqlite: async (sqlite) => sqlite.$client.close(), pg: (pg) => pg.$client.close() })
}

/**
 * A database operation written once for both engines: a generator that yields drizzle queries and receives each one's
 * rows (`yield* q(query)`). On SQLite, whose transactions are synchronous, `transaction` runs it to the end inside one
 * BEGIN IMMEDIATE without ever yielding to the event loop; on PostgreSQL each query is awaited inside the transaction.
 * Repository functions that must be able to join a caller's transaction are written as steps.
 */
export type Step<T> = Generator<PromiseLike<unknown>, T, unknown>

/** One query inside a step: its rows (or, for a write without RETURNING, nothing of use). */
export function* q<T>(query: PromiseLike<T>): Step<Awaited<T>> {
  return (yield query) as Awaited<T>
}

/** Runs a step to the end synchronously on SQLite's drizzle queries (every query builder has a synchronous `all`). */
function runSync<T>(step: Step<T>): T {
  let next = step.next()
  while (!next.done) {
    let rows: unknown
    try {
      rows = (next.value as unknown as { all(): unknown }).all()
    } catch (error) {
      next = step.throw(error)
      continue
    }
    next = step.next(rows)
  }
  return next.value
}

/** Runs a step to the end, awaiting each query (PostgreSQL). */
async function runAsync<T>(step: Step<T>): Promise<T> {
  let next = step.next()
  while (!next.done) {
    let rows: unknown
    try {
      rows = await next.value
    } catch (error) {
      next = step.throw(error)
      continue
    }
    next = step.next(rows)
  }
  return next.value
}

/**
 * A query prepared once and run many times with `await statement.execute(values)` (placeholders bound per call): for
 * the hot lookups, where building the query costs more than running it. PostgreSQL names its prepared statements.
 */
export function prepared<Q extends { prepare(): unknown }>(name: string, query: Q): ReturnType<Q['prepare']> {
  if (engine === 'pg') return (query as unknown as { prepare(name: string): ReturnType<Q['prepare']> }).prepare(name)
  return query.prepare() as ReturnType<Q['prepare']>
}

/** The rows of a raw SQL query (one the query builder cannot express). */
export async function rawRows<T>(db: Db, query: SQL): Promise<T[]> {
  return byEngine(db, {
    sqlite: async (sqlite) => sqlite.all<T>(query),
    pg: async (pg) => (await pg.execute(query)) as unknown as T[],
  })
}

/** Runs a step outside any transaction (a single statement, or reads that need no snapshot). */
export async function run<T>(step: Step<T>): Promise<T> {
  return engine === 'pg' ? runAsync(step) : runSync(step)
}

/**
 * Runs reads that must agree with each other (a list's counts and its rows) on one snapshot: a deferred transaction on
 * SQLite (no lock taken, run synchronously to the end), a read-only REPEATABLE READ one on PostgreSQL.
 */
export async function snapshot<T>(db: Db, body: (tx: Tx) => Step<T>): Promise<T> {
  return byEngine(db, {
    sqlite: async (sqlite) => sqlite.transaction((tx) => runSync(body(tx)), { behavior: 'deferred' }),
    pg: (pg) =>
      pg.transaction(async (tx) => runAsync(body(tx as unknown as Tx)), {
        isolationLevel: 'repeatable read',
        accessMode: 'read only',
      }),
  })
}

/**
 * The lock every transaction takes first on PostgreSQL (any constant, the same in every instance): transactions run
 * one at a time across instances, as SQLite's BEGIN IMMEDIATE runs writers one at a time, so a check and the write it
 * allows never interleave with another's (quotas, windows, single-use claims). They are short: no I/O but the queries.
 */
export const WRITER_LOCK = 0x696d6777 // "imgw"

/**
 * Runs `body` in one transaction that writers take in turn: a check and the write it allows cannot interleave with
 * another's. A throw rolls everything back.
 */
export async function transaction<T>(db: Db, body: (tx: Tx) => Step<T>): Promise<T> {
  return byEngine(db, {
    sqlite: async (sqlite) => sqlite.transaction((tx) => runSync(body(tx)), { behavior: 'immediate' }),
    pg: (pg) =>
      pg.transaction(async (tx) => {
        await tx.execute(sqlText`SELECT pg_advisory_xact_lock(${WRITER_LOCK})`)
        return runAsync(body(tx as unknown as Tx))
      }),
  })
}

/**
 * Runs a write, and when another connection holds the lock, runs it again after each delay in turn,
 * waiting asynchronously (the event loop keeps serving); the last busy error is thrown.
 */
export async function retryBusy<T>(
  write: () => T | Promise<T>,
  delays: readonly number[] = BUSY_RETRY_DELAYS_MS,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write()
    } catch (error) {
      if (!isBusy(error) || attempt >= delays.length) throw error
      await Bun.sleep(delays[attempt])
    }
  }
}
