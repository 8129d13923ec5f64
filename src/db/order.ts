import { type SQL, sql } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { engine } from './engine'

/** The tables PostgreSQL gives a `seq` column in insertion order (migrations-pg/0002_insertion_order_notify.sql). */
export const INSERTION_SEQ_TABLES: ReadonlySet<string> = new Set(['images', 'album_images'])

/**
 * The order rows of `table` (one of INSERTION_SEQ_TABLES) were inserted in, for ties between rows of the same time (a
 * batch upload): SQLite's rowid, PostgreSQL's `seq`.
 */
export const insertionOrder = (table: SQLiteTable): SQL<number> =>
  sql<number>`${table}.${sql.raw(engine === 'pg' ? '"seq"' : 'rowid')}`
