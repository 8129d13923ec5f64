/**
 * `cli migrate-db`: an instance populated on SQLite (a real server process, no DATABASE_URL) moved into PostgreSQL, then
 * served from there and checked clean by `cli check`; and `cli backup`/`restore` on PostgreSQL (`npm run test:pg`;
 * skipped on SQLite).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { engine } from '../../src/db/engine'
import { makeImage, uploadForm } from '../fixtures'
import { databaseEnv, dropDatabase, freePort, jsonBody, runCli, startTestServer } from '../helpers'

const ROOT = join(import.meta.dir, '../..')
const KEYS = {
  JWT_SECRET: 'migrate-test-jwt-secret'.padEnd(48, 'x'),
  VARIANT_SECRET: 'migrate-test-variant-secret'.padEnd(48, 'x'),
  TOTP_KEY: 'migrate-test-totp-key'.padEnd(48, 'x'),
}

/** `bun src/cli.ts ...args` with this environment (only it: no DATABASE_URL unless given). */
const cli = (env: Record<string, string>, ...args: string[]) =>
  runCli(args, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir(), ...env })

describe.skipIf(engine !== 'pg')('moving an instance from SQLite to PostgreSQL', () => {
  const dirs: string[] = []
  const databases: Record<string, string>[] = []
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-migrate-'))
  dirs.push(dataDir)
  const sqliteEnv = { DATA_DIR: dataDir, LOG_REQUESTS: 'false', ...KEYS }
  /** What the SQLite instance held, as its API showed it. */
  const before: { token: string; apiKey: string; ids: string[]; albumId: string; images: Record<string, any> } = {
    token: '',
    apiKey: '',
    ids: [],
    albumId: '',
    images: {},
  }

  beforeAll(async () => {
    // A SQLite instance, as operators run it today: a server process on a data directory.
    const port = freePort()
    const server = Bun.spawn([process.execPath, 'src/index.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? dataDir,
        ...sqliteEnv,
        PORT: String(port),
      },
      stdout: 'ignore',
      stderr: 'ignore',
    })
    const base = `http://127.0.0.1:${port}`
    try {
      for (let i = 0; i < 200; i++) {
        if ((await fetch(`${base}/healthz`).catch(() => null))?.ok) break
        await Bun.sleep(50)
      }
      const call = async (path: string, init: RequestInit = {}) => {
        const res = await fetch(base + path, init)
        return { status: res.status, body: (await res.json()) as any }
      }
      const reg = await call('/api/auth/register', {
        method: 'POST',
        ...jsonBody({ username: 'mover', email: 'mover@example.com', password: 'correct horse battery' }),
      })
      expect(reg.status).toBe(201)
      before.token = reg.body.token
      const bearer = { authorization: `Bearer ${before.token}` }
      const key = await call('/api/keys', { method: 'POST', ...jsonBody({ name: 'moved' }, bearer) })
      before.apiKey = key.body.apiKey
      const album = await call('/api/albums', {
        method: 'POST',
        ...jsonBody({ title: 'Holiday album', isPublic: true }, bearer),
      })
      before.albumId = album.body.album.id
      for (const [i, name] of ['sunset-beach.png', 'mountain.png', 'city-night.png'].entries()) {
        const up = await call('/api/v1/upload', {
          method: 'POST',
          headers: { 'x-api-key': before.apiKey },
          body: uploadForm([{ bytes: await makeImage('png', 32, 32, 40 + i), name }], { visibility: 'public' }),
        })
        expect(up.status).toBe(201)
        before.ids.push(up.body.id)
      }
      await call(`/api/albums/${before.albumId}/images`, {
        method: 'POST',
        ...jsonBody({ imageId: before.ids[0] }, bearer),
      })
      // Views are counted, then written at shutdown.
      for (let i = 0; i < 3; i++) await fetch(`${base}/i/${before.ids[1]}`)
    } finally {
      server.kill('SIGTERM')
      await server.exited
    }
  })

  afterAll(async () => {
    for (const env of databases) await dropDatabase(env)
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  test('migrate-db copies every row into an empty database; the instance then runs on it and check is clean', async () => {
    const target = await databaseEnv()
    databases.push(target)
    const migrated = await cli({ ...sqliteEnv, ...target }, 'migrate-db')
    expect(migrated.code).toBe(0)
    expect(migrated.out).toContain('images: 3 rows')
    expect(migrated.out).toContain('users: 1 rows')

    const check = await cli({ ...sqliteEnv, ...target }, 'check')
    expect(check.code).toBe(0)
    const report = JSON.parse(check.out)
    expect(report.images).toBe(3)
    expect(report.missingOriginals).toEqual([])
    expect(report.strayFiles).toEqual([])

    // The same data directory (its files) on the PostgreSQL database.
    const t = await startTestServer({ ...target, ...KEYS, DATA_DIR: dataDir })
    try {
      // Signed-in sessions, keys and passwords moved with their rows.
      expect((await t.json('/api/auth/me', { headers: { authorization: `Bearer ${before.token}` } })).status).toBe(200)
      const login = await t.json('/api/auth/login', {
        method: 'POST',
        ...jsonBody({ username: 'mover', password: 'correct horse battery' }),
      })
      expect(login.status).toBe(200)
      const listed = await t.json('/api/v1/images', { headers: { 'x-api-key': before.apiKey } })
      expect(listed.status).toBe(200)
      expect(listed.body.total).toBe(3)
      const viewed = await t.json(`/api/v1/image/${before.ids[1]}`)
      expect(viewed.body.data.views).toBe(3)
      // The search index was built by PostgreSQL's triggers: a filename word, and the public album's title.
      const byName = await t.json('/api/search?q=sunset')
      expect(byName.body.images.map((i: { id: string }) => i.id)).toEqual([before.ids[0]])
      const byAlbum = await t.json('/api/search?q=holiday')
      expect(byAlbum.body.images.map((i: { id: string }) => i.id)).toEqual([before.ids[0]])
      // Files are served; new rows get ids after the copied ones.
      const direct = new URL(viewed.body.data.url).pathname
      expect((await t.fetch(direct)).status).toBe(200)
      const second = await t.json('/api/auth/register', {
        method: 'POST',
        ...jsonBody({ username: 'newcomer', email: 'newcomer@example.com', password: 'correct horse battery' }),
      })
      expect(second.status).toBe(201)
      expect(second.body.user.id).toBeGreaterThan(1)
    } finally {
      await t.stop()
    }

    // A copy never merges: the database holds rows now.
    const again = await cli({ ...sqliteEnv, ...target }, 'migrate-db')
    expect(again.code).not.toBe(0)
    expect(again.err).toContain('not empty')
  })

  test('backup and restore on PostgreSQL: a logical copy into a SQLite file, restored into an empty database', async () => {
    const source = await databaseEnv()
    const restored = await databaseEnv()
    databases.push(source, restored)
    expect((await cli({ ...sqliteEnv, ...source }, 'migrate-db')).code).toBe(0)
    const backupDir = mkdtempSync(join(tmpdir(), 'imghost-pg-backup-'))
    const restoreDir = mkdtempSync(join(tmpdir(), 'imghost-pg-restore-'))
    dirs.push(backupDir, restoreDir)
    const target = join(backupDir, 'copy')
    const made = await cli({ ...sqliteEnv, ...source }, 'backup', target)
    expect(made.code).toBe(0)
    expect(made.out).toContain('Backed up 3 images')

    const back = await cli({ DATA_DIR: restoreDir, LOG_REQUESTS: 'false', ...KEYS, ...restored }, 'restore', target)
    expect(back.code).toBe(0)
    expect((await cli({ DATA_DIR: restoreDir, ...KEYS, ...restored }, 'check')).code).toBe(0)
    const t = await startTestServer({ ...restored, ...KEYS, DATA_DIR: restoreDir })
    try {
      const listed = await t.json('/api/v1/images', { headers: { 'x-api-key': before.apiKey } })
      expect(listed.body.total).toBe(3)
      const image = await t.json(`/api/v1/image/${before.ids[2]}`)
      expect((await t.fetch(new URL(image.body.data.url).pathname)).status).toBe(200)
    } finally {
      await t.stop()
    }
  })
})
