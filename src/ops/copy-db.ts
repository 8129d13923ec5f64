import type { SQL as BunSQL } from 'bun'
import { asc, count, sql } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/pg-core'
import type { Db } from '../db/client'
import { INSERTION_SEQ_TABLES } from '../db/order'
import type { PgDb } from '../db/pg'
import * as pgSchema from '../db/schema-pg'
import * as sqliteSchema from '../db/schema-sqlite'

/** Every table, parents before the tables whose foreign keys point at them (schema-sqlite's order). */
const TABLES = [
  'users',
  'apiKeys',
  'verificationTokens',
  'sessions',
  'invites',
  'passkeys',
  'totpSecrets',
  'recoveryCodes',
  'oidcIdentities',
  'authFlows',
  'embedProfiles',
  'images',
  'albums',
  'albumImages',
  'uploadWindows',
  'reports',
  'blocks',
  'blockSha256s',
  'tusUploads',
  'webhooks',
  'variants',
  'variantFailures',
  'healthProbe',
] as const
export type TableName = (typeof TABLES)[number]

/** Rows per read and per insert: far below either engine's limit on bound parameters. */
const BATCH = 500

/** One side of a copy: a database of either engine. */
export type Side = { engine: 'sqlite'; db: Db } | { engine: 'pg'; db: PgDb }

// The two engines' drizzle types differ; the copy only selects, counts and inserts whole rows, which both share.
// biome-ignore lint/suspicious/noExplicitAny: see above
type AnyDb = any

const tableOf = (side: Side, name: TableName) =>
  // biome-ignore lint/performance/noDynamicNamespaceImportAccess: a table by name, looked up once per table copied
  side.engine === 'pg' ? pgSchema[name] : sqliteSchema[name]

/**
 * Each table's rows in the order they were inserted (SQLite's rowid, PostgreSQL's `seq` where a table has one, its
 * primary key elsewhere, composite ones included): ties between rows of one millisecond keep their order in the copy,
 * and the batches of a table, read by offset, never overlap.
 */
function insertionOrder(side: Side, name: TableName) {
  if (side.engine === 'sqlite') return [sql`rowid`]
  // biome-ignore lint/performance/noDynamicNamespaceImportAccess: a table by name, looked up once per table copied
  const config = getTableConfig(pgSchema[name])
  if (INSERTION_SEQ_TABLES.has(config.name)) return [sql`"seq"`]
  return [...config.columns.filter((c) => c.primary), ...config.primaryKeys.flatMap((k) => k.columns)].map((c) =>
    asc(c),
  )
}

export async function countRows(side: Side): Promise<Record<TableName, number>> {
  const counts = {} as Record<TableName, number>
  for (const name of TABLES) {
    const [row] = await (side.db as AnyDb).select({ n: count() }).from(tableOf(side, name))
    counts[name] = Number(row?.n ?? 0)
  }
  return counts
}

/**
 * Copies every row of `from` into `to`, an empty database of either engine (the search documents follow from the
 * triggers of the target; PostgreSQL's identity sequences are moved past the copied ids). Returns the rows per table.
 * Refuses a target that holds any row: a copy never merges.
 */
export async function copyDatabase(
  from: Side,
  to: Side,
  opts: { except?: TableName[] } = {},
): Promise<Partial<Record<TableName, number>>> {
  const already = await countRows(to)
  const held = TABLES.filter((name) => already[name] > 0)
  if (held.length > 0) throw new Error(`The target database is not empty (rows in ${held.join(', ')})`)
  const copied: Partial<Record<TableName, number>> = {}
  for (const name of TABLES.filter((table) => !opts.except?.includes(table))) {
    const source = tableOf(from, name)
    const target = tableOf(to, name)
    let done = 0
    for (;;) {
      const rows = await (from.db as AnyDb)
        .select()
        .from(source)
        .orderBy(...insertionOrder(from, name))
        .limit(BATCH)
        .offset(done)
      if (rows.length > 0) await (to.db as AnyDb).insert(target).values(rows)
      done += rows.length
      if (rows.length < BATCH) break
    }
    copied[name] = done
  }
  if (to.engine === 'pg') {
    const client = to.db.$client as unknown as BunSQL
    for (const { table, column } of pgSchema.identityColumns) {
      await client.unsafe(
        `SELECT setval(pg_get_serial_sequence('"${table}"', '${column}'), coalesce(max("${column}"), 1), max("${column}") IS NOT NULL) FROM "${table}"`,
      )
    }
  }
  const after = await countRows(to)
  const short = TABLES.filter((name) => after[name] !== (copied[name] ?? 0))
  if (short.length > 0) throw new Error(`Copy incomplete: row counts differ in ${short.join(', ')}`)
  return copied
}
