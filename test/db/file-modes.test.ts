/**
 * The files holding secrets are readable by their owner only (issue 17): the SQLite database (password and key
 * hashes) with its -wal and -shm files, the generated `jwt-secret`, and the data directory's lock file: 0600.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { engine } from '../../src/db/engine'
import { startTestServer, type TestServer } from '../helpers'

let t: TestServer | undefined
afterAll(() => t?.stop())

describe('file modes', () => {
  test('database, WAL, shared memory, generated JWT secret and lock file are 0600', async () => {
    // Without JWT_SECRET, so the secret is generated into the data directory (on SQLite: with DATABASE_URL the secret is
    // required, config.ts, and the test run gives one).
    t = await startTestServer(engine === 'pg' ? {} : { JWT_SECRET: '' })
    // A write, so the WAL certainly exists.
    expect((await t.fetch('/healthz')).status).toBe(200)
    // A PostgreSQL server keeps no database file, nor a generated secret, in the data directory.
    const sqliteFiles = ['imghost.sqlite', 'imghost.sqlite-wal', 'imghost.sqlite-shm', 'jwt-secret']
    for (const name of [...(engine === 'pg' ? [] : sqliteFiles), 'server.lock']) {
      expect((statSync(join(t.dataDir, name)).mode & 0o777).toString(8), name).toBe('600')
    }
  }, 60_000)
})
