/**
 * `upgrade`, the step between installing a version and starting it, judged on a copy of the sources given one more
 * migration (the next version, as a test can make it): the backup is taken first and holds the database as it was; a
 * migration that fails after committing part of its work is undone by restoring that backup; a running server's data
 * directory is refused.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { engine } from '../../src/db/engine'
import { startTestServer } from '../helpers'
import { cliAt, makeLibrary, root, tarModes } from './library'

const scratch = mkdtempSync(join(tmpdir(), 'imghost-upgrade-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** A copy of this checkout's sources whose migrations end with one more, `sql` (statements split as drizzle-kit does). */
function nextVersion(name: string, sql: string[]): string {
  const app = join(scratch, name)
  cpSync(join(root, 'src'), join(app, 'src'), { recursive: true })
  cpSync(join(root, 'package.json'), join(app, 'package.json'))
  symlinkSync(join(root, 'node_modules'), join(app, 'node_modules'))
  const migrations = join(app, 'src/db/migrations')
  const journalFile = join(migrations, 'meta/_journal.json')
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { idx: number; when: number }[] }
  const last = journal.entries.at(-1)!
  const tag = `${String(last.idx + 1).padStart(4, '0')}_upgrade_probe`
  journal.entries.push({ ...last, idx: last.idx + 1, when: last.when + 1000, tag } as never)
  writeFileSync(journalFile, JSON.stringify(journal, null, 2))
  writeFileSync(join(migrations, `${tag}.sql`), sql.join('\n--> statement-breakpoint\n'))
  return join(app, 'src/cli.ts')
}

/** Rows of the data directory's SQLite file. */
function rows<T>(dataDir: string, statement: string): T[] {
  const db = new Database(join(dataDir, 'imghost.sqlite'), { readonly: true })
  try {
    return db.query(statement).all() as T[]
  } finally {
    db.close()
  }
}

const migrationsOf = (dataDir: string) =>
  rows<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM __drizzle_migrations')[0]!.n
const tables = (dataDir: string) =>
  rows<{ name: string }>(dataDir, "SELECT name FROM sqlite_master WHERE type = 'table'")
    .map((r) => r.name)
    .sort()

// The SQLite upgrade (PostgreSQL's migrations are one transaction of PostgreSQL's own, docs/operations.md).
describe.skipIf(engine === 'pg')('upgrade', () => {
  const pictures = join(scratch, 'pictures')
  const libraryAt = async (name: string) => {
    const dir = join(scratch, name)
    await makeLibrary(dir, pictures)
    return dir
  }
  beforeAll(() => mkdirSync(pictures))

  test('takes a backup of the database as it was, then applies the new migration', async () => {
    const data = await libraryAt('good')
    const cli = nextVersion('good-app', ['CREATE TABLE upgrade_probe (x integer)'])
    const before = migrationsOf(data)
    const run = await cliAt(data, ['upgrade', '--json'], { entry: cli })
    expect(run.code, run.err).toBe(0)
    const result = JSON.parse(run.out)
    expect(result).toMatchObject({ applied: 1 })
    expect(result.backup).toStartWith(join(data, 'backups', 'before-'))
    expect(migrationsOf(data)).toBe(before + 1)
    expect(tables(data)).toContain('upgrade_probe')

    // The backup: the database without the new table, private in the archive, with the images.
    const modes = tarModes(result.backup)
    expect(modes['imghost.sqlite']).toBe('-rw-------')
    expect(Object.keys(modes).filter((name) => name.startsWith('files/'))).toHaveLength(6)
    const restored = join(scratch, 'good-restored')
    expect((await cliAt(restored, ['restore', result.backup])).code).toBe(0)
    expect(migrationsOf(restored)).toBe(before)
    expect(tables(restored)).not.toContain('upgrade_probe')

    // Up to date: nothing applied, a backup all the same (the operator asked for one).
    const again = await cliAt(data, ['upgrade', '--json', '--backup', join(scratch, 'again.tar')], { entry: cli })
    expect(again.code, again.err).toBe(0)
    expect(JSON.parse(again.out)).toMatchObject({ applied: 0, backup: join(scratch, 'again.tar') })
  })

  test('a migration that fails after committing part of its work is rolled back from the backup', async () => {
    const data = await libraryAt('bad')
    // Committed half-way, as a migration outside one transaction would be, then failing.
    const cli = nextVersion('bad-app', [
      "UPDATE users SET role = 'admin'",
      'CREATE TABLE upgrade_probe (x integer)',
      'COMMIT',
      'BEGIN',
      'SELECT no_such_column FROM users',
    ])
    const before = { migrations: migrationsOf(data), tables: tables(data) }
    const backup = join(scratch, 'bad-backup.tar')
    const run = await cliAt(data, ['upgrade', '--backup', backup], { entry: cli })
    expect(run.code).toBe(1)
    expect(run.err.trim().split('\n')).toHaveLength(1)
    expect(run.err).toContain('no such column: no_such_column')
    expect(run.err).toContain(`the data directory was restored from ${backup}`)
    expect(rows<{ role: string }>(data, 'SELECT role FROM users')).toEqual([{ role: 'user' }])
    expect(tables(data)).toEqual(before.tables)
    expect(migrationsOf(data)).toBe(before.migrations)
    // The library works as before with this version's CLI, images and all.
    const check = await cliAt(data, ['check'])
    expect(check.code, check.out).toBe(0)
    expect(JSON.parse(check.out).images).toBe(3)
    expect(existsSync(backup)).toBe(true)
  })

  test('refused while a server runs on the data directory', async () => {
    const t = await startTestServer()
    try {
      const run = await cliAt(t.dataDir, ['upgrade'])
      expect(run.code).toBe(1)
      expect(run.err.trim()).toMatch(/^error: upgrade refused: DATA_DIR .* is in use by a running imghost server/)
      expect(existsSync(join(t.dataDir, 'backups'))).toBe(false)
    } finally {
      await t.stop()
    }
  })
})

describe.skipIf(engine !== 'pg')('upgrade on PostgreSQL', () => {
  test('applies every migration an empty database lacks, once; no backup of its own', async () => {
    // An empty database (not the suite's migrated template), as before a first start.
    const admin = new SQL(process.env.PG_TEST_URL!)
    const name = `t_${crypto.randomUUID().replaceAll('-', '')}`
    await admin.unsafe(`CREATE DATABASE "${name}"`)
    const url = new URL(process.env.PG_TEST_URL!)
    url.pathname = `/${name}`
    const env = {
      DATABASE_URL: url.toString(),
      JWT_SECRET: 'test-secret-'.padEnd(48, 'x'),
      VARIANT_SECRET: 'test-variant-secret'.padEnd(48, 'x'),
      TOTP_KEY: 'test-totp-key'.padEnd(48, 'x'),
    }
    try {
      const dir = join(scratch, 'pg')
      const all = readdirSync(join(root, 'src/db/migrations-pg')).filter((file) => file.endsWith('.sql')).length
      const first = await cliAt(dir, ['upgrade', '--json'], { env })
      expect(first.code, first.err).toBe(0)
      expect(JSON.parse(first.out)).toMatchObject({ applied: all, backup: null })
      const again = await cliAt(dir, ['upgrade', '--json'], { env })
      expect(JSON.parse(again.out)).toMatchObject({ applied: 0, backup: null })
    } finally {
      await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
      await admin.close()
    }
  })
})
