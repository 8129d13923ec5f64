/**
 * The PostgreSQL database (DATABASE_URL=postgres://...): drizzle over Bun's built-in client, with migrations-pg
 * applied first. Several instances may start at once on one database: the migrations run under an advisory lock, so
 * one instance migrates and the others, once it is done, find nothing left to apply.
 */
import { join } from 'node:path'
import { SQL } from 'bun'
import { type BunSQLDatabase, drizzle } from 'drizzle-orm/bun-sql'
import { migrate } from 'drizzle-orm/bun-sql/migrator'
import * as schema from './schema-pg'

export type PgDb = BunSQLDatabase<typeof schema> & { $client: SQL }

/** The advisory lock key of migrations (any constant; the same in every instance). */
const MIGRATION_LOCK = 0x696d6768 // "imgh"

export async function openPgDatabase(url: string): Promise<PgDb> {
  const client = new SQL(url)
  const db = drizzle({ client, schema })
  try {
    // A session lock lives on one connection: this one holds it while the pool's others migrate.
    const lock = await client.reserve()
    try {
      await lock`SELECT pg_advisory_lock(${MIGRATION_LOCK})`
      await migrate(db, { migrationsFolder: join(import.meta.dir, 'migrations-pg') })
    } finally {
      // A connection that broke has lost the lock with its session: nothing to release then.
      await lock`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {})
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
