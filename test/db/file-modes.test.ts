/**
 * The files holding secrets are readable by their owner only (issue 17): the SQLite database (password and key
 * hashes) with its -wal and -shm files, the generated `jwt-secret`, and the data directory's lock file: 0600.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../helpers'

let t: TestServer | undefined
afterAll(() => t?.stop())

describe('file modes', () => {
  test('database, WAL, shared memory, generated JWT secret and lock file are 0600', async () => {
    // Without JWT_SECRET, so the secret is generated into the data directory.
    t = await startTestServer({ JWT_SECRET: '' })
    // A write, so the WAL certainly exists.
    expect((await t.fetch('/healthz')).status).toBe(200)
    for (const name of ['imghost.sqlite', 'imghost.sqlite-wal', 'imghost.sqlite-shm', 'jwt-secret', 'server.lock']) {
      expect((statSync(join(t.dataDir, name)).mode & 0o777).toString(8), name).toBe('600')
    }
  }, 60_000)
})
