/**
 * The PostgreSQL database (DATABASE_URL=postgres://...): drizzle over Bun's built-in client, with migrations-pg
 * applied first. Several instances may start at once on one database: the migrations run under an advisory lock, so
 * one instance migrates and the others, once it is done, find nothing left to apply.
 */
import { join } from 'node:path'
import { SQL } from 'bun'
import { type BunSQLDatabase, drizzle } from 'drizzle-orm/bun-sql'
import { migrate } from 'drizzle-orm/bun-sql/migrator'
import { TOOL_BUSY_TIMEOUT_MS } from './client'
import * as schema from './schema-pg'

export type PgDb = BunSQLDatabase<typeof schema> & { $client: SQL }

/** The advisory lock key of migrations (any constant; the same in every instance). */
const MIGRATION_LOCK = 0x696d6768 // "imgh"

/**
 * A session that sits this long inside a transaction is ended by the server, which releases its locks: the service's
 * transactions run their queries back to back, so only a stuck or cut-off instance gets there, and the others' writes
 * (which all take the writer lock, client.ts) must not wait on it for ever.
 */
const IDLE_IN_TRANSACTION_MS = 30_000

/**
 * Every statement is planned for its own values (a custom plan). Bun's client prepares each query once per
 * connection, and after five runs PostgreSQL would keep one plan for any values, costed without them: at a million
 * images the owner's name filter then sorted every match of the owner instead of walking their newest rows, and a page
 * took 50-135 ms instead of 2.4. Planning these reads costs a fraction of a millisecond.
 */
const PLAN_CACHE_MODE = 'force_custom_plan'

/**
 * `lockTimeoutMs`: how long a statement waits for a lock (the writer lock included) before it fails, answered as the
 * 503 of a busy database, as a held SQLite lock is; tools (the CLI) wait as long as they do on SQLite.
 */
export async function openPgDatabase(
  url: string,
  opts: { lockTimeoutMs: number } = { lockTimeoutMs: TOOL_BUSY_TIMEOUT_MS },
): Promise<PgDb> {
  const client = new SQL(url, {
    connection: {
      lock_timeout: opts.lockTimeoutMs,
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
      plan_cache_mode: PLAN_CACHE_MODE,
    },
  })
  const db = drizzle({ client, schema })
  try {
    // A session lock lives on one connection: this one holds it while the pool's others migrate.
    const lock = await client.reserve()
    try {
      // Another instance's migrations take what they take: wait for them, whatever the lock timeout.
      await lock`SET lock_timeout = 0`
      await lock`SELECT pg_advisory_lock(${MIGRATION_LOCK})`
      await migrate(db, { migrationsFolder: join(import.meta.dir, 'migrations-pg') })
    } finally {
      // A connection that broke has lost the lock with its session: nothing to release then.
      await lock`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {})
      await lock`RESET lock_timeout`.catch(() => {})
      lock.release()
    }
  } catch (err) {
    await client.close()
    throw err
  }
  return db
}

export async function closePgDatabase(db: PgDb): Promise<void> {
  await db.$client.close()
}
