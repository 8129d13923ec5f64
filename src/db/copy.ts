import { asc, count, getTableColumns, type SQL, sql } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/pg-core'
import type { SqliteDb } from './client'
import { INSERTION_SEQ_TABLES } from './order'
import type { PgDb } from './pg'
import * as pgSchema from './schema-pg'
import * as sqliteSchema from './schema-sqlite'

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
  'uploadIntents',
  'webhooks',
  'variants',
  'variantFailures',
  'healthProbe',
] as const
export type TableName = (typeof TABLES)[number]

/** Rows per read and per insert: far below either engine's limit on bound parameters. */
const BATCH = 500

/** One side of a copy: a database of either engine. */
export type Side = { engine: 'sqlite'; db: SqliteDb } | { engine: 'pg'; db: PgDb }

// The two engines' drizzle types differ; the copy only selects, counts and inserts whole rows, which both share.
// biome-ignore lint/suspicious/noExplicitAny: see above
type AnyDb = any

const tableOf = (side: Side, name: TableName) =>
  // biome-ignore lint/performance/noDynamicNamespaceImportAccess: a table by name, looked up once per table copied
  side.engine === 'pg' ? pgSchema[name] : sqliteSchema[name]

/**
 * The key a table's rows are read by, a batch after another, in the order they were inserted (SQLite's rowid,
 * PostgreSQL's `seq` where a table has one, else its primary key): ties between rows of one millisecond keep their
 * order in the copy, and each batch is found through an index, however far the copy has gone. Null for PostgreSQL's
 * tables with a composite key (small ones: the batches go by offset there, in key order).
 */
function batchKey(side: Side, name: TableName): SQL | null {
  if (side.engine === 'sqlite') return sql`rowid`
  // biome-ignore lint/performance/noDynamicNamespaceImportAccess: a table by name, looked up once per table copied
  const config = getTableConfig(pgSchema[name])
  if (INSERTION_SEQ_TABLES.has(config.name)) return sql`"seq"`
  const primary = config.columns.filter((c) => c.primary)
  return primary.length === 1 ? sql`${primary[0]}` : null
}

/** A composite-keyed PostgreSQL table's rows in key order (batchKey is null for it). */
function keyOrder(name: TableName) {
  // biome-ignore lint/performance/noDynamicNamespaceImportAccess: a table by name, looked up once per table copied
  return getTableConfig(pgSchema[name]).primaryKeys.flatMap((k) => k.columns.map((c) => asc(c)))
}

/**
 * Columns the target's triggers fill as the rows they count arrive (an album's counts follow its memberships): copied
 * as zero, or they would count twice. image_counts is not copied at all (TABLES leaves it out) for the same reason.
 */
const COUNTED: Partial<Record<TableName, Record<string, number>>> = { albums: { imageCount: 0, publicCount: 0 } }

/** One batch of a table's rows after `last` (its batchKey's value), with that key of the batch's last row. */
async function readBatch(side: Side, name: TableName, last: unknown, done: number) {
  const table = tableOf(side, name)
  const key = batchKey(side, name)
  const db = side.db as AnyDb
  if (!key)
    return {
      rows: await db
        .select()
        .from(table)
        .orderBy(...keyOrder(name))
        .limit(BATCH)
        .offset(done),
      last,
    }
  const read = await db
    .select({ row: getTableColumns(table), key: sql`${key}`.as('batch_key') })
    .from(table)
    .where(last === undefined ? undefined : sql`${key} > ${last}`)
    .orderBy(key)
    .limit(BATCH)
  return { rows: read.map((r: { row: unknown }) => r.row), last: read.at(-1)?.key ?? last }
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
  opts: { except?: TableName[]; onBatch?: (table: TableName, rows: number) => void } = {},
): Promise<Partial<Record<TableName, number>>> {
  const already = await countRows(to)
  const held = TABLES.filter((name) => already[name] > 0)
  if (held.length > 0) throw new Error(`The target database is not empty (rows in ${held.join(', ')})`)
  const copied: Partial<Record<TableName, number>> = {}
  for (const name of TABLES.filter((table) => !opts.except?.includes(table))) {
    const target = tableOf(to, name)
    let done = 0
    let last: unknown
    for (;;) {
      const batch = await readBatch(from, name, last, done)
      const rows = COUNTED[name] ? batch.rows.map((row: object) => ({ ...row, ...COUNTED[name] })) : batch.rows
      if (rows.length > 0) await (to.db as AnyDb).insert(target).values(rows)
      done += rows.length
      opts.onBatch?.(name, rows.length)
      last = batch.last
      if (rows.length < BATCH) break
    }
    copied[name] = done
  }
  if (to.engine === 'pg') {
    const client = to.db.$client
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
