import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { generateOverCopy } from './drizzle-kit'

const dir = mkdtempSync(join(tmpdir(), 'imghost-db-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// SQLite's pragmas and migrations: PostgreSQL's schema is checked by test/db/schema-pg.test.ts.
describe.skipIf(engine === 'pg')('the SQLite database', () => {
  test('opens in WAL mode with foreign keys enforced', () => {
    const db = openDatabase(join(dir, 'pragmas.sqlite'))
    try {
      const sqlite = db.$client
      expect((sqlite.query('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode).toBe('wal')
      expect((sqlite.query('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys).toBe(1)
      // Not only set but enforced: a key for a user that does not exist is refused.
      expect(() =>
        sqlite.run("INSERT INTO api_keys (user_id, name, prefix, secret_hash) VALUES (424242, 'k', 'p', 'h')"),
      ).toThrow(/FOREIGN KEY/)
    } finally {
      db.$client.close()
    }
  })

  test("a server's connection reads through a memory map of up to 1 GiB and a 16 MiB page cache; a tool's maps none", () => {
    const pragmas = (serving: boolean) => {
      const db = openDatabase(join(dir, 'reads.sqlite'), { serving })
      try {
        const pragma = (name: string) => Object.values(db.$client.query(`PRAGMA ${name}`).get() as object)[0]
        return { mmap: pragma('mmap_size'), cache: pragma('cache_size') }
      } finally {
        db.$client.close()
      }
    }
    expect(pragmas(true)).toEqual({ mmap: 2 ** 30, cache: -16384 })
    // SQLite's defaults: no map, 2 MiB of cache (a walk of the whole file keeps little resident).
    expect(pragmas(false)).toEqual({ mmap: 0, cache: -2000 })
  })

  test('a connection keeps compiled statements by their text, the least recently used dropped past 512', () => {
    const db = openDatabase(join(dir, 'statements.sqlite'))
    try {
      const sqlite = db.$client
      const first = sqlite.prepare('SELECT count(*) AS n FROM users')
      expect(sqlite.prepare('SELECT count(*) AS n FROM users')).toBe(first)
      // Bound at preparation: not kept, each its own.
      expect(sqlite.prepare('SELECT ?1 AS v', [1])).not.toBe(sqlite.prepare('SELECT ?1 AS v', [1]))
      for (let i = 0; i < 512; i++) sqlite.prepare(`SELECT ${i} AS v`)
      const again = sqlite.prepare('SELECT count(*) AS n FROM users')
      expect(again).not.toBe(first)
      // A kept statement still reads the table as it is after a schema change (SQLite recompiles it).
      sqlite.run("INSERT INTO users (username, email, password_hash) VALUES ('kept', 'kept@example.com', 'x')")
      sqlite.run('ALTER TABLE users ADD COLUMN scratch TEXT')
      expect(sqlite.prepare('SELECT count(*) AS n FROM users').get()).toEqual({ n: 1 })
      expect(sqlite.prepare('SELECT count(*) AS n FROM users')).toBe(again)
    } finally {
      db.$client.close()
    }
  })

  test('the committed migrations match src/db/schema-sqlite.ts (drizzle-kit finds nothing to generate)', () => {
    const run = generateOverCopy({
      dialect: 'sqlite',
      schema: './src/db/schema-sqlite.ts',
      migrations: 'src/db/migrations',
      scratch: dir,
    })
    expect(run.exitCode, run.output).toBe(0)
    expect(run.output).toContain('No schema changes')
    expect(run.unchanged).toBe(true)
  })
})
