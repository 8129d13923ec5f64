/**
 * The few pieces of raw SQL written differently by engine, so queries outside src/db/ never ask which one runs.
 */
import { type SQL, sql } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { engine } from './engine'

/** The running engine's choice of two (values, or functions to call). */
export const dialect = <T>(choices: { sqlite: T; pg: T }): T => (engine === 'pg' ? choices.pg : choices.sqlite)

/** A true flag in raw SQL: PostgreSQL's boolean, SQLite's 1. */
export const sqlTrue: SQL = sql.raw(dialect({ sqlite: '1', pg: 'true' }))

/** The table, read through the named index on SQLite (`INDEXED BY`), whose planner would pick another; plain on PostgreSQL. */
export const indexedBy = <T extends SQLiteTable>(table: T, index: string): SQL | T =>
  dialect<SQL | T>({ sqlite: sql`${table} INDEXED BY ${sql.raw(index)}`, pg: table })

/** The table, read without any index on SQLite (`NOT INDEXED`), whose planner would walk one; plain on PostgreSQL. */
export const notIndexed = <T extends SQLiteTable>(table: T): SQL | T =>
  dialect<SQL | T>({ sqlite: sql`${table} NOT INDEXED`, pg: table })

/**
 * Whether other instances may share this database (PostgreSQL): what a process keeps of it must be added up with theirs
 * or be told of their changes. SQLite's file belongs to one server (the data directory's lock).
 */
export const sharedDatabase = dialect({ sqlite: false, pg: true })
