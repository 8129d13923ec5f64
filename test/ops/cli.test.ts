import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { SQL } from 'bun'
import { loadConfig } from '../../src/config'
import { engine } from '../../src/db/engine'
import { createConfiguredStorage } from '../../src/storage/configured'
import { makeImage, uploadForm } from '../fixtures'
import {
  databaseEnv,
  dropDatabase,
  registerUser,
  runCli,
  startTestServer,
  storageEnv,
  type TestServer,
  userWithKey,
} from '../helpers'

let t: TestServer
let uploaded: { id: string; url: string; thumbnail: string }[]
const scratch = mkdtempSync(join(tmpdir(), 'imghost-cli-'))

/** Each data directory has its own storage: its `files/`, or (STORAGE=s3) a prefix of its own in the test bucket. */
const storages = new Map<string, Record<string, string>>()
const storageOf = (dataDir: string) => {
  if (!storages.has(dataDir)) storages.set(dataDir, storageEnv())
  return storages.get(dataDir)!
}
const storageAt = (dataDir: string) => createConfiguredStorage(loadConfig({ DATA_DIR: dataDir, ...storageOf(dataDir) }))

/**
 * Each data directory's database on PostgreSQL runs (the suite's own DATABASE_URL is another): the test server's for
 * its directory, a fresh one for any other (`await withDatabase(dir)` first), with the keys required beside it.
 * Nothing on SQLite, where the database is the directory's file.
 */
const databases = new Map<string, Record<string, string>>()
async function withDatabase(dataDir: string) {
  if (engine === 'pg' && !databases.has(dataDir))
    databases.set(dataDir, { ...(await databaseEnv()), JWT_SECRET: 'test-secret-'.padEnd(48, 'x') })
}
const databaseOf = (dataDir: string) => {
  if (engine === 'pg' && !databases.has(dataDir)) throw new Error(`no database prepared for ${dataDir}`)
  return databases.get(dataDir) ?? {}
}

const cli = (dataDir: string, ...args: string[]) =>
  runCli(args, { ...process.env, ...storageOf(dataDir), ...databaseOf(dataDir), DATA_DIR: dataDir })

/** Rows of a data directory's database, through a connection of its own (placeholders `$1`...). */
async function query<T>(dataDir: string, statement: string, ...params: unknown[]): Promise<T[]> {
  return await statementOn(dataDir, true, statement, params)
}

/** A write to a data directory's database, through a connection of its own (what a fault or a bug leaves). */
async function write(dataDir: string, statement: string) {
  await statementOn(dataDir, false, statement, [])
}

async function statementOn<T>(dataDir: string, readonly: boolean, statement: string, params: unknown[]): Promise<T[]> {
  if (engine === 'pg') {
    const client = new SQL(databaseOf(dataDir).DATABASE_URL!)
    try {
      return [...(await client.unsafe(statement, params))] as T[]
    } finally {
      await client.close()
    }
  }
  const db = new Database(join(dataDir, 'imghost.sqlite'), { readonly })
  try {
    return db.query(statement.replaceAll(/\$(\d+)/g, '?$1')).all(...(params as never[])) as T[]
  } finally {
    db.close()
  }
}

/** Flags as 0 or 1 on both engines (PostgreSQL has booleans). */
const userRow = async (dataDir: string, username: string) => {
  const [row] = await query<{ role: string; banned: unknown; email_verified: unknown }>(
    dataDir,
    'SELECT role, banned, email_verified FROM users WHERE username = $1',
    username,
  )
  return { role: row.role, banned: Number(row.banned), email_verified: Number(row.email_verified) }
}

const rows = (dataDir: string) => query(dataDir, 'SELECT id, filename, size, sha256, user_id FROM images ORDER BY id')

beforeAll(async () => {
  t = await startTestServer()
  if (engine === 'pg')
    databases.set(
      t.dataDir,
      Object.fromEntries(
        ['DATABASE_URL', 'JWT_SECRET', 'VARIANT_SECRET', 'TOTP_KEY'].map((name) => [name, t.env[name]!]),
      ),
    )
  storages.set(
    t.dataDir,
    Object.fromEntries(Object.entries(t.env).filter(([name]) => name === 'STORAGE' || name.startsWith('S3_'))),
  )
  const user = await userWithKey(t)
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm(
      [
        { bytes: await makeImage('png', 40, 40), name: 'one.png' },
        { bytes: await makeImage('jpeg', 80, 60), name: 'two.jpg' },
      ],
      { album: 'cli album' },
    ),
  })
  uploaded = res.body.images
})
afterAll(async () => {
  await t.stop()
  for (const [dir, env] of databases) if (dir !== t.dataDir) await dropDatabase(env)
  rmSync(scratch, { recursive: true, force: true })
})

describe('accounts', () => {
  test('create-admin, set-role, ban, unban', async () => {
    const dir = join(scratch, 'accounts')
    await withDatabase(dir)
    expect((await cli(dir, 'create-admin', 'root', 'root@example.com', 'password123')).code).toBe(0)
    expect((await cli(dir, 'create-admin', 'root', 'other@example.com', 'password123')).code).toBe(1)
    const user = () => userRow(dir, 'root')
    expect(await user()).toEqual({ role: 'admin', banned: 0, email_verified: 1 })
    expect((await cli(dir, 'set-role', 'root', 'user')).code).toBe(0)
    expect((await user()).role).toBe('user')
    expect((await cli(dir, 'ban', 'root')).code).toBe(0)
    expect((await user()).banned).toBe(1)
    expect((await cli(dir, 'unban', 'root')).code).toBe(0)
    expect((await user()).banned).toBe(0)
    expect((await cli(dir, 'ban', 'nobody')).code).toBe(1)
    // A role outside the two is a usage error.
    expect((await cli(dir, 'set-role', 'root', 'king')).code).toBe(2)
  })

  test('create-user makes a verified account that logs in; ban ends its sessions on the running server', async () => {
    const name = `cli${Date.now().toString(36)}`
    const made = await cli(t.dataDir, 'create-user', name, `${name}@example.com`, 'password123')
    expect(made.code, made.err).toBe(0)
    expect(made.out).toContain(`Created user ${name}`)
    expect(await userRow(t.dataDir, name)).toEqual({ role: 'user', banned: 0, email_verified: 1 })
    expect((await cli(t.dataDir, 'create-user', name, 'other@example.com', 'password123')).code).toBe(1)
    const login = await t.json('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: name, password: 'password123' }),
    })
    expect(login.status).toBe(200)
    const bearer = { authorization: `Bearer ${login.body.token}` }
    expect((await t.json('/api/auth/me', { headers: bearer })).status).toBe(200)
    expect((await cli(t.dataDir, 'ban', name)).code).toBe(0)
    expect((await cli(t.dataDir, 'unban', name)).code).toBe(0)
    // Unbanned, but the session the ban ended stays ended.
    expect((await t.json('/api/auth/me', { headers: bearer })).status).toBe(401)
  })

  test('verify-email marks an account registered through the API as verified, while the server runs', async () => {
    const account = await registerUser(t)
    const name = account.user.username as string
    expect((await userRow(t.dataDir, name)).email_verified).toBe(0)
    expect((await t.json('/api/auth/me', { headers: account.bearer })).body.user.emailVerified).toBe(false)
    // Usernames are matched case-insensitively.
    const run = await cli(t.dataDir, 'verify-email', name.toUpperCase())
    expect(run.code).toBe(0)
    expect((await userRow(t.dataDir, name)).email_verified).toBe(1)
    // The running server re-reads the account on every request.
    expect((await t.json('/api/auth/me', { headers: account.bearer })).body.user.emailVerified).toBe(true)

    const unknown = await cli(t.dataDir, 'verify-email', 'nobody-here')
    expect(unknown.code).toBe(1)
    expect(unknown.err).toContain('No account named nobody-here')
  })
})

describe('backup and restore', () => {
  for (const target of ['dir', 'backup.tar']) {
    test(`a backup taken while the server runs (${target}) restores the same images and rows`, async () => {
      const dest = join(scratch, `b-${target}`)
      const backup = await cli(t.dataDir, 'backup', dest)
      expect(backup.code).toBe(0)
      const restoredDir = join(scratch, `restored-${target}`)
      await withDatabase(restoredDir)
      expect((await cli(restoredDir, 'restore', dest)).code).toBe(0)
      expect(await rows(restoredDir)).toEqual(await rows(t.dataDir))
      // Without the key TOTP secrets are sealed with, no two-factor code would work after a restore (generated into the
      // data directory on SQLite; with DATABASE_URL, TOTP_KEY is given).
      if (engine !== 'pg')
        expect(readFileSync(join(restoredDir, 'totp-key'), 'utf8')).toBe(
          readFileSync(join(t.dataDir, 'totp-key'), 'utf8'),
        )

      const again = await startTestServer({
        DATA_DIR: restoredDir,
        ...storageOf(restoredDir),
        ...databaseOf(restoredDir),
      })
      try {
        for (const image of uploaded) {
          const original = await (await t.fetch(new URL(image.url).pathname)).arrayBuffer()
          const restored = await again.fetch(new URL(image.url).pathname)
          expect(restored.status).toBe(200)
          expect(new Uint8Array(await restored.arrayBuffer())).toEqual(new Uint8Array(original))
          expect((await again.fetch(new URL(image.thumbnail).pathname)).status).toBe(200)
        }
      } finally {
        await again.server.stop()
      }
    })
  }
})

describe('check', () => {
  /** A data directory of its own holding what the test server holds: a backup of it, restored. */
  async function copyOfServerData(name: string) {
    const dir = join(scratch, name)
    await withDatabase(dir)
    expect((await cli(t.dataDir, 'backup', `${dir}-src`)).code).toBe(0)
    expect((await cli(dir, 'restore', `${dir}-src`)).code).toBe(0)
    expect((await cli(dir, 'check')).code).toBe(0)
    return dir
  }

  test('finds a deleted thumbnail and a stray file; --repair remakes the thumbnail and removes the stray', async () => {
    const dir = await copyOfServerData('check')
    const storage = storageAt(dir)
    await storage.delete(`thumbs/${uploaded[0].id}.webp`)
    writeFileSync(join(scratch, 'stray'), 'stray')
    await storage.put('originals/ZZZZZZZZ.png', join(scratch, 'stray'))
    const found = await cli(dir, 'check')
    expect(found.code).toBe(2)
    const report = JSON.parse(found.out)
    expect(report.missingThumbnails).toEqual([`thumbs/${uploaded[0].id}.webp`])
    expect(report.strayFiles).toEqual(['originals/ZZZZZZZZ.png'])

    const repaired = await cli(dir, 'check', '--repair')
    expect(repaired.code).toBe(0)
    expect(JSON.parse(repaired.out).repairedThumbnails).toEqual([`thumbs/${uploaded[0].id}.webp`])
    expect((await cli(dir, 'check')).code).toBe(0)
  })

  test('finds image counts that differ from the rows; --repair rewrites them from a recount', async () => {
    const dir = await copyOfServerData('check-counts')
    const recount = `SELECT CASE WHEN e.everyone = 1 THEN -1 ELSE coalesce(i.user_id, 0) END AS owner_id,
      i.created_at / 86400000 AS day, count(*) AS images, sum(i.size) AS bytes
      FROM images i, (SELECT 0 AS everyone UNION ALL SELECT 1) AS e GROUP BY 1, 2 ORDER BY 1, 2`
    const kept = 'SELECT owner_id, day, images, bytes FROM image_counts WHERE images <> 0 ORDER BY 1, 2'
    const numbers = (rows: Record<string, unknown>[]) =>
      rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)])))
    const truth = numbers(await query(dir, recount))
    expect(numbers(await query(dir, kept))).toEqual(truth)
    const albumCounts = 'SELECT image_count, public_count FROM albums'
    expect(numbers(await query(dir, albumCounts))).toEqual([{ image_count: 2, public_count: 2 }])
    // Every owner's days off by some images and bytes, everyone's days gone, and the album's counts off.
    await write(dir, 'UPDATE image_counts SET images = images + 3, bytes = bytes + 100 WHERE owner_id >= 0')
    await write(dir, 'DELETE FROM image_counts WHERE owner_id = -1')
    await write(dir, 'UPDATE albums SET image_count = 7, public_count = 0')
    const found = await cli(dir, 'check')
    expect(found.code).toBe(2)
    expect(JSON.parse(found.out)).toMatchObject({
      wrongCountDays: truth.length,
      repairedCountDays: 0,
      wrongAlbumCounts: 1,
      repairedAlbumCounts: 0,
    })

    const repaired = await cli(dir, 'check', '--repair')
    expect(repaired.code).toBe(0)
    expect(JSON.parse(repaired.out)).toMatchObject({
      wrongCountDays: truth.length,
      repairedCountDays: truth.length,
      wrongAlbumCounts: 1,
      repairedAlbumCounts: 1,
    })
    expect(numbers(await query(dir, kept))).toEqual(truth)
    expect(numbers(await query(dir, albumCounts))).toEqual([{ image_count: 2, public_count: 2 }])
    expect(JSON.parse((await cli(dir, 'check')).out)).toMatchObject({ wrongCountDays: 0, wrongAlbumCounts: 0 })
  })

  test('finds a deleted original, which --repair cannot remake: both exit 2', async () => {
    const dir = await copyOfServerData('check-original')
    const original = `originals/${basename(new URL(uploaded[1].url).pathname)}`
    expect(original).toMatch(new RegExp(`^originals/${uploaded[1].id}\\.\\w+$`))
    await storageAt(dir).delete(original)

    for (const args of [['check'], ['check', '--repair']]) {
      const run = await cli(dir, ...args)
      expect(run.code, args.join(' ')).toBe(2)
      expect(JSON.parse(run.out)).toEqual({
        images: uploaded.length,
        missingOriginals: [original],
        missingThumbnails: [],
        strayFiles: [],
        repairedThumbnails: [],
        removedStrayFiles: [],
        wrongCountDays: 0,
        repairedCountDays: 0,
        wrongAlbumCounts: 0,
        repairedAlbumCounts: 0,
      })
    }
  })
})
