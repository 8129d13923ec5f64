import { afterAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { closeDatabase, openDatabase } from '../../src/db/client'

const ROOT = join(import.meta.dir, '../..')
const dir = mkdtempSync(join(tmpdir(), 'imghost-db-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the SQLite database', () => {
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
      closeDatabase(db)
    }
  })

  test('the committed migrations match src/db/schema.ts (drizzle-kit finds nothing to generate)', () => {
    const out = join(dir, 'migrations')
    cpSync(join(ROOT, 'src/db/migrations'), out, { recursive: true })
    const before = readdirSync(out).sort()
    // drizzle-kit reads --out relative to the working directory.
    const run = Bun.spawnSync(
      [
        join(ROOT, 'node_modules/.bin/drizzle-kit'),
        'generate',
        '--dialect',
        'sqlite',
        '--schema',
        './src/db/schema.ts',
        '--out',
        relative(ROOT, out),
      ],
      {
        cwd: ROOT,
        stdout: 'pipe',
        stderr: 'pipe',
      },
    )
    const output = `${run.stdout.toString()}${run.stderr.toString()}`
    expect(run.exitCode, output).toBe(0)
    expect(output).toContain('No schema changes')
    expect(readdirSync(out).sort()).toEqual(before)
  })
})
