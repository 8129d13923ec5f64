/**
 * The PostgreSQL schema (src/db/schema-pg.ts, src/db/migrations-pg) against SQLite's: the same tables, columns, keys
 * and indexes, the same JS values for the same row, and search (migrations-pg/0001_search.sql with pgSearchMatch) with
 * the documents and matching rules of SQLite's FTS5 index. On a throwaway cluster (test/pg-cluster.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { type Column, eq, getTableColumns, getTableName, is, sql, type Table } from 'drizzle-orm'
import { PgTable, getTableConfig as pgConfig } from 'drizzle-orm/pg-core'
import { SQLiteInteger, SQLiteTable, getTableConfig as sqliteConfig } from 'drizzle-orm/sqlite-core'
import { closeDatabase, openDatabase } from '../../src/db/client'
import { closePgDatabase, openPgDatabase, type PgDb } from '../../src/db/pg'
import * as pgSchema from '../../src/db/schema-pg'
import { albumImages, albums, blocks, images, passkeys, users } from '../../src/db/schema-pg'
import * as sqliteSchema from '../../src/db/schema-sqlite'
import { pgSearchMatch } from '../../src/modules/gallery/search-pg'
import { databaseEnv } from '../helpers'
import { type PgCluster, startPgCluster } from '../pg-cluster'
import { generateOverCopy } from './drizzle-kit'

/** How many migrations PostgreSQL's journal lists: each applied once. */
const PG_MIGRATIONS = (
  (await Bun.file(join(import.meta.dir, '../../src/db/migrations-pg/meta/_journal.json')).json()) as {
    entries: unknown[]
  }
).entries.length

const sqliteTables = Object.values(sqliteSchema as Record<string, unknown>).filter((t): t is SQLiteTable =>
  is(t, SQLiteTable),
)
const pgTables = new Map(
  Object.values(pgSchema as Record<string, unknown>)
    .filter((t): t is PgTable => is(t, PgTable))
    .map((t) => [getTableName(t), t]),
)
const pgTableOf = (table: Table) => pgTables.get(getTableName(table))!

/** A table's shape as both engines can state it: columns, keys, foreign keys, indexes (by name). */
function shape(config: ReturnType<typeof sqliteConfig> | ReturnType<typeof pgConfig>) {
  const names = (columns: Column[]) => columns.map((c) => c.name)
  return {
    columns: config.columns.map((c) => ({
      name: c.name,
      notNull: c.notNull,
      primary: c.primary,
      unique: c.isUnique,
      // SQLite counts a plain integer primary key (a rowid) as defaulted; the app always gives those (health_probe's
      // id 1, totp_secrets' user_id), and PostgreSQL's have no default.
      hasDefault: c.hasDefault && !(is(c, SQLiteInteger) && c.primary && !c.autoIncrement),
      enumValues: c.enumValues ?? null,
    })),
    primaryKeys: config.primaryKeys.map((k) => names(k.columns)),
    foreignKeys: config.foreignKeys
      .map((fk) => {
        const ref = fk.reference()
        return {
          columns: names(ref.columns),
          table: getTableName(ref.foreignTable),
          foreignColumns: names(ref.foreignColumns),
          onDelete: fk.onDelete,
        }
      })
      .sort((a, b) => a.columns.join().localeCompare(b.columns.join())),
    indexes: config.indexes
      .map((i) => ({
        name: i.config.name,
        unique: i.config.unique,
        // An expression (lower(...)) is compared by the columns it names.
        columns: i.config.columns.map((c) => ('name' in c ? c.name : 'expression')),
        partial: i.config.where !== undefined,
      }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name))),
  }
}

/** A value of each kind SQLite's columns give, inserted into both engines. */
function sampleValue(column: Column): unknown {
  if (column.enumValues) return column.enumValues.at(-1)
  switch (column.dataType) {
    case 'date':
      return new Date(1_763_000_000_123)
    case 'boolean':
      return true
    case 'number':
      return 7
    case 'buffer':
      return Buffer.from([0, 1, 2, 255])
    case 'string':
      return `${column.name} é ✓`
    default:
      throw new Error(`no sample for ${column.name}: ${column.dataType}`)
  }
}

let cluster: PgCluster
let admin: SQL
let db: PgDb

/** A fresh, migrated database of the cluster. */
async function freshDatabase(): Promise<string> {
  const name = `t_${crypto.randomUUID().replaceAll('-', '')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(cluster.url)
  url.pathname = `/${name}`
  return url.toString()
}

beforeAll(async () => {
  cluster = await startPgCluster()
  admin = new SQL(cluster.url)
  db = await openPgDatabase(await freshDatabase())
})

afterAll(async () => {
  if (db) await closePgDatabase(db)
  await admin?.close()
  await cluster?.stop()
})

describe('schema parity', () => {
  test('the committed migrations match src/db/schema-pg.ts (drizzle-kit finds nothing to generate)', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'imghost-pg-kit-'))
    try {
      const run = generateOverCopy({
        dialect: 'postgresql',
        schema: './src/db/schema-pg.ts',
        migrations: 'src/db/migrations-pg',
        scratch,
      })
      expect(run.exitCode, run.output).toBe(0)
      expect(run.output).toContain('No schema changes')
      expect(run.unchanged).toBe(true)
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  test('every SQLite table has a PostgreSQL one, and nothing more', () => {
    expect(sqliteTables.length).toBeGreaterThan(20)
    expect([...pgTables.keys()].sort()).toEqual(sqliteTables.map((t) => getTableName(t)).sort())
  })

  test.each(sqliteTables.map((t) => [getTableName(t), t] as const))('%s: same columns, keys and indexes', (_, t) => {
    expect(shape(pgConfig(pgTableOf(t)))).toEqual(shape(sqliteConfig(t)))
    // The same property names too: repositories address columns by them.
    expect(Object.keys(getTableColumns(pgTableOf(t)))).toEqual(Object.keys(getTableColumns(t)))
  })

  test('the same row gives the same JS values on both engines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'imghost-parity-'))
    const sqlite = openDatabase(join(dir, 'parity.db'))
    const pg = await openPgDatabase(await freshDatabase())
    // One row per table, each alone: foreign keys are not what this compares.
    sqlite.$client.exec('PRAGMA foreign_keys = OFF')
    try {
      const pgRows: Record<string, unknown> = {}
      await pg.transaction(async (tx) => {
        // Replica mode skips foreign key checks (and the search triggers) for this transaction.
        await tx.execute(sql`SET LOCAL session_replication_role = replica`)
        for (const t of sqliteTables) {
          const row = Object.fromEntries(
            Object.entries(getTableColumns(t)).map(([key, column]) => [key, sampleValue(column)]),
          )
          sqlite.insert(t).values(row).run()
          await tx.insert(pgTableOf(t)).values(row)
          pgRows[getTableName(t)] = (await tx.select().from(pgTableOf(t)))[0]
        }
      })
      for (const t of sqliteTables) {
        const expected = { [getTableName(t)]: sqlite.select().from(t).all()[0] }
        expect({ [getTableName(t)]: pgRows[getTableName(t)] }).toEqual(expected)
      }
    } finally {
      await closePgDatabase(pg)
      await closeDatabase(sqlite)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('values on PostgreSQL', () => {
  test('identity ids, millisecond times, booleans, buffers and 64-bit sizes come back as the app reads them', async () => {
    const [user] = await db
      .insert(users)
      .values({ username: 'Values', email: 'values@example.com', passwordHash: 'x', emailVerified: true })
      .returning()
    expect(typeof user.id).toBe('number')
    expect(user.emailVerified).toBe(true)
    expect(user.banned).toBe(false)
    // The default: now, in epoch milliseconds, a Date.
    expect(user.createdAt).toBeInstanceOf(Date)
    expect(Number.isNaN(user.createdAt.getTime())).toBe(false)

    const at = new Date(Date.UTC(2031, 4, 6, 7, 8, 9, 987))
    const publicKey = Buffer.from([0, 255, 128, 7])
    await db
      .insert(passkeys)
      .values({ userId: user.id, credentialId: 'cred', publicKey, counter: 2 ** 32 - 1, name: 'key', lastUsedAt: at })
    const [key] = await db.select().from(passkeys).where(eq(passkeys.userId, user.id))
    expect(Buffer.isBuffer(key.publicKey)).toBe(true)
    expect(key.publicKey.equals(publicKey)).toBe(true)
    expect(key.lastUsedAt).toEqual(at)
    expect(key.counter).toBe(2 ** 32 - 1)

    // Sizes past 2^31 bytes fit; a null blob is null.
    await db.insert(images).values({
      id: 'bigfile',
      userId: user.id,
      filename: 'big.png',
      mime: 'image/png',
      ext: 'png',
      width: 1,
      height: 1,
      size: 5 * 2 ** 30,
      sha256: 'f'.repeat(64),
      expiresAt: at,
    })
    const [image] = await db.select().from(images).where(eq(images.id, 'bigfile'))
    expect(image.size).toBe(5 * 2 ** 30)
    expect(image.expiresAt).toEqual(at)
    expect(image.nsfw).toBe(false)
    // Raw SQL compares the times with numbers, as on SQLite.
    const [{ n }] = await db.execute<{ n: string }>(
      sql`SELECT count(*) AS n FROM ${images} WHERE ${images.expiresAt} = ${at.getTime()}`,
    )
    expect(Number(n)).toBe(1)
    const [block] = await db.insert(blocks).values({ reason: 'r', source: 'cli' }).returning()
    expect(block.thumbnail).toBeNull()
    expect(typeof block.id).toBe('number')
  })

  test('instances starting at once migrate once', async () => {
    const url = await freshDatabase()
    const opened = await Promise.all([openPgDatabase(url), openPgDatabase(url), openPgDatabase(url)])
    const [{ n }] = await opened[0].execute<{ n: string }>(sql`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`)
    expect(Number(n)).toBe(PG_MIGRATIONS)
    await Promise.all(opened.map(closePgDatabase))
  })
})

describe('GIN indexes', () => {
  // With PostgreSQL's default (fastupdate on) new entries wait in a pending list until vacuum merges them, and every
  // search through the index reads the whole list: reads would slow down between vacuums (migrations-pg/0012).
  test('search and the name filter have theirs, and each takes new entries into the index itself', async () => {
    const gin = await db.$client.unsafe<{ name: string; options: string[] | null }[]>(
      `SELECT c.relname AS name, c.reloptions AS options FROM pg_class c JOIN pg_am a ON a.oid = c.relam
       WHERE a.amname = 'gin' AND c.relkind = 'i' ORDER BY 1`,
    )
    expect(gin.map((g) => g.name)).toEqual(
      expect.arrayContaining(['images_name_keys', 'images_user_filename_trgm', 'search_docs_words']),
    )
    for (const g of gin)
      expect({ name: g.name, options: g.options ?? [] }).toEqual({
        name: g.name,
        options: expect.arrayContaining(['fastupdate=off']),
      })
  })
})

describe('vacuum', () => {
  // An owner's totals read images_user_expires, whose bitmap scan visits dead row versions until a vacuum: after an
  // expiry sweep at a million images they took 20x as long until one ran (migrations-pg/0014). PostgreSQL's default
  // waits for a fifth of the table to be dead.
  test('at a million images, autovacuum cleans images before 10,000 rows are dead', async () => {
    const [{ threshold }] = await db.$client.unsafe<{ threshold: number }[]>(
      `SELECT coalesce(o.base, current_setting('autovacuum_vacuum_threshold')::float8)
            + coalesce(o.scale, current_setting('autovacuum_vacuum_scale_factor')::float8) * 1e6 AS threshold
       FROM (SELECT (SELECT split_part(x, '=', 2)::float8 FROM unnest(c.reloptions) x
                     WHERE x LIKE 'autovacuum_vacuum_threshold=%') AS base,
                    (SELECT split_part(x, '=', 2)::float8 FROM unnest(c.reloptions) x
                     WHERE x LIKE 'autovacuum_vacuum_scale_factor=%') AS scale
             FROM pg_class c WHERE c.oid = 'images'::regclass) o`,
    )
    expect(Number(threshold)).toBeLessThan(10_000)
  })
})

describe('plans', () => {
  // PostgreSQL itself says how it planned each prepared statement (pg_prepared_statements): after five runs it would
  // switch to a plan made without the values (generic), which at a million images sorted an owner's every match.
  test("a query run many times on one of the pool's connections is planned for its values each time", async () => {
    const connection = await db.$client.reserve()
    try {
      for (let i = 0; i < 8; i++) await connection`SELECT count(*) FROM images WHERE user_id = ${i}`
      const [plans] = await connection<{ generic: number; custom: number }[]>`
        SELECT sum(generic_plans)::int AS generic, sum(custom_plans)::int AS custom FROM pg_prepared_statements
        WHERE statement LIKE 'SELECT count(*) FROM images WHERE user_id = $1%'`
      expect(plans).toEqual({ generic: 0, custom: 8 })
    } finally {
      connection.release()
    }
  })
})

describe('test databases', () => {
  test('databaseEnv gives each caller a migrated copy of the template of its own, several at once', async () => {
    const template = `tpl_${crypto.randomUUID().replaceAll('-', '')}`
    await admin.unsafe(`CREATE DATABASE ${template}`)
    const templateUrl = new URL(cluster.url)
    templateUrl.pathname = `/${template}`
    await closePgDatabase(await openPgDatabase(templateUrl.toString()))
    const saved = { url: process.env.PG_TEST_URL, template: process.env.PG_TEST_TEMPLATE }
    process.env.PG_TEST_URL = cluster.url
    process.env.PG_TEST_TEMPLATE = template
    try {
      const urls = (await Promise.all([databaseEnv(), databaseEnv(), databaseEnv()])).map((env) => env.DATABASE_URL)
      expect(new Set(urls).size).toBe(3)
      for (const url of urls) {
        const client = new SQL(url)
        const [{ n }] = await client`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`
        expect(n).toBe(PG_MIGRATIONS)
        await client.close()
      }
    } finally {
      for (const [name, value] of [
        ['PG_TEST_URL', saved.url],
        ['PG_TEST_TEMPLATE', saved.template],
      ] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }
  })
})

describe('search', () => {
  let owner: number
  let imageCount = 0

  async function image(filename: string): Promise<string> {
    const id = `img${++imageCount}`
    await db.insert(images).values({
      id,
      userId: owner,
      filename,
      mime: 'image/png',
      ext: 'png',
      width: 1,
      height: 1,
      size: 1,
      sha256: '0'.repeat(64),
    })
    return id
  }

  async function album(title: string, fields: Partial<typeof albums.$inferInsert>, ...imageIds: string[]) {
    const id = `alb${++imageCount}`
    await db.insert(albums).values({ id, userId: owner, title, ...fields })
    for (const imageId of imageIds) await db.insert(albumImages).values({ albumId: id, imageId })
    return id
  }

  const found = async (...words: string[]) =>
    (await db.select({ id: images.id }).from(images).where(pgSearchMatch(words)))
      .map((r) => r.id)
      .filter((id) => id.startsWith('img'))
      .sort()

  beforeAll(async () => {
    const [user] = await db
      .insert(users)
      .values({ username: 'searcher', email: 'searcher@example.com', passwordHash: 'x' })
      .returning()
    owner = user.id
  })

  test('a filename is split at every non letter or digit, and each word matches as a prefix', async () => {
    const cat = await image('cat.jpg')
    const path = await image('a/b-c_d')
    expect(await found('cat')).toEqual([cat])
    expect(await found('jpg')).toEqual([cat])
    expect(await found('ca', 'jp')).toEqual([cat])
    expect(await found('at')).toEqual([])
    expect(await found('cat', 'png')).toEqual([])
    expect(await found('b', 'd')).toEqual([path])
  })

  test('case and diacritics are folded, on both sides; letters of any script are letters', async () => {
    const cafe = await image('cafe.png')
    const creme = await image('Crème Brûlée.PNG')
    const scripts = await image('Ёлка_東京_Straße 2024.webp')
    expect(await found('CAFÉ')).toEqual([cafe])
    expect(await found('creme', 'BRULEE')).toEqual([creme])
    expect(await found('ёлка')).toEqual([scripts])
    expect(await found('ЕЛК')).toEqual([scripts])
    expect(await found('東京')).toEqual([scripts])
    expect(await found('straße')).toEqual([scripts])
    expect(await found('2024')).toEqual([scripts])
  })

  test("letters are letters whatever the database's locale (here C)", async () => {
    const name = `t_${crypto.randomUUID().replaceAll('-', '')}`
    await admin.unsafe(`CREATE DATABASE ${name} ENCODING 'UTF8' LOCALE 'C' TEMPLATE template0`)
    const url = new URL(cluster.url)
    url.pathname = `/${name}`
    const c = await openPgDatabase(url.toString())
    try {
      const [user] = await c
        .insert(users)
        .values({ username: 'c', email: 'c@example.com', passwordHash: 'x' })
        .returning()
      await c.insert(images).values({
        ...{ id: 'imgC', userId: user.id, filename: 'Ёлка_東京_Crème.png', mime: 'image/png', ext: 'png' },
        ...{ width: 1, height: 1, size: 1, sha256: '0'.repeat(64) },
      })
      for (const word of ['ЁЛКА', '東京', 'creme']) {
        expect(
          await c
            .select({ id: images.id })
            .from(images)
            .where(pgSearchMatch([word])),
        ).toEqual([{ id: 'imgC' }])
      }
    } finally {
      await closePgDatabase(c)
    }
  })

  test('user text is never tsquery syntax', async () => {
    const xyz = await image('x y z.png')
    const joined = await image('xyz.png')
    expect(await found('x&y|!z:*')).toEqual([xyz])
    for (const word of ["'", '\\', '!', '(', ':*', '&|', "q'w"]) expect(await found(word)).toEqual([])
    expect(await found("'); DROP TABLE images; --")).toEqual([])
    expect(await found('xyz')).toEqual([joined])
  })

  test('album titles: only public, live albums without a password are indexed, and changes re-index', async () => {
    const shown = await image('one.png')
    const other = await image('two.png')
    await album('Holiday Snaps', { isPublic: true }, shown)
    const secret = await album('Secret Stuff', { isPublic: false }, other)
    const guarded = await album('Guarded Pictures', { isPublic: true, passwordHash: 'h' }, other)
    await album('Gone Album', { isPublic: true, deletedAt: new Date() }, other)
    expect(await found('holiday')).toEqual([shown])
    expect(await found('secret')).toEqual([])
    expect(await found('guarded')).toEqual([])
    expect(await found('gone')).toEqual([])
    // All words must match one document: a title and a filename are two.
    expect(await found('holiday', 'one')).toEqual([])

    await db.update(albums).set({ isPublic: true }).where(eq(albums.id, secret))
    expect(await found('secret')).toEqual([other])
    await db.update(albums).set({ passwordHash: 'h' }).where(eq(albums.id, secret))
    expect(await found('secret')).toEqual([])
    await db.update(albums).set({ passwordHash: null }).where(eq(albums.id, guarded))
    expect(await found('guarded')).toEqual([other])
    await db.update(albums).set({ title: 'Renamed' }).where(eq(albums.id, guarded))
    expect(await found('guarded')).toEqual([])
    expect(await found('renamed')).toEqual([other])

    // Renaming the image re-indexes its filename and keeps its album documents.
    await db.update(images).set({ filename: 'uno.png' }).where(eq(images.id, shown))
    expect(await found('one')).toEqual([])
    expect(await found('uno')).toEqual([shown])
    expect(await found('holiday')).toEqual([shown])

    await db.delete(albumImages).where(eq(albumImages.imageId, other))
    expect(await found('renamed')).toEqual([])
    await db.delete(albums).where(eq(albums.title, 'Holiday Snaps'))
    expect(await found('holiday')).toEqual([])
    await db.delete(images).where(eq(images.id, shown))
    const [{ n }] = await db.execute<{ n: string }>(
      sql`SELECT count(*) AS n FROM search_docs WHERE image_id = ${shown}`,
    )
    expect(Number(n)).toBe(0)
  })
})
