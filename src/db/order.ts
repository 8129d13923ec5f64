import { type SQL, sql } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { engine } from './engine'

/**
 * The order rows of `table` were inserted in, for ties between rows of the same time (a batch upload): SQLite's rowid,
 * PostgreSQL's `seq` (migrations-pg/0002_insertion_order_notify.sql; images and album_images only).
 */
export const insertionOrder = (table: SQLiteTable): SQL<number> =>
  sql<number>`${table}.${sql.raw(engine === 'pg' ? '"seq"' : 'rowid')}`
