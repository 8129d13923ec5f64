import { sql } from 'drizzle-orm'
import { type Db, rawRows } from '../src/db/client'
import { engine } from '../src/db/engine'

/**
 * The tables of a server's database, by name: on SQLite with drizzle's migrations journal, on PostgreSQL those of the
 * `public` schema (drizzle keeps its journal in a schema of its own there).
 */
export async function tableNames(db: Db): Promise<string[]> {
  const query =
    engine === 'pg'
      ? sql`SELECT table_name AS name FROM information_schema.tables
          WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`
      : sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_stat%' ORDER BY name`
  return (await rawRows<{ name: string }>(db, query)).map((r) => r.name)
}

/** Every row of one table as the driver gives it (column names as stored). */
export function tableRows(db: Db, table: string): Promise<Record<string, unknown>[]> {
  return rawRows<Record<string, unknown>>(db, sql.raw(`SELECT * FROM "${table.replaceAll('"', '""')}"`))
}
