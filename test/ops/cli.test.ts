import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeImage, uploadForm } from '../fixtures'
import { loadConfig } from '../../src/config'
import { createConfiguredStorage } from '../../src/storage/configured'
import { startTestServer, storageEnv, userWithKey, type TestServer } from '../helpers'

const root = join(import.meta.dir, '..', '..')
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

function cli(dataDir: string, ...args: string[]) {
  const proc = Bun.spawnSync([process.execPath, join(root, 'src/cli.ts'), ...args], { env: { ...process.env, ...storageOf(dataDir), DATA_DIR: dataDir }, cwd: root })
  return { code: proc.exitCode, out: proc.stdout.toString(), err: proc.stderr.toString() }
}

const rows = (dataDir: string) => {
  const db = new Database(join(dataDir, 'imghost.sqlite'), { readonly: true })
  const result = db.query('SELECT id, filename, size, sha256, user_id FROM images ORDER BY id').all()
  db.close()
  return result
}

beforeAll(async () => {
  t = await startTestServer()
  storages.set(t.dataDir, Object.fromEntries(Object.entries(t.env).filter(([name]) => name === 'STORAGE' || name.startsWith('S3_'))))
  const user = await userWithKey(t)
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 40, 40), name: 'one.png' }, { bytes: await makeImage('jpeg', 80, 60), name: 'two.jpg' }]),
  })
  uploaded = res.body.images
})
afterAll(async () => {
  await t.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe('accounts', () => {
  test('create-admin, set-role, ban, unban, verify-email', () => {
    const dir = join(scratch, 'accounts')
    expect(cli(dir, 'create-admin', 'root', 'root@example.com', 'password123').code).toBe(0)
    expect(cli(dir, 'create-admin', 'root', 'other@example.com', 'password123').code).toBe(1)
    const db = () => new Database(join(dir, 'imghost.sqlite'), { readonly: true })
    const user = () => {
      const d = db()
      const row = d.query("SELECT role, banned, email_verified FROM users WHERE username = 'root'").get() as any
      d.close()
      return row
    }
    expect(user()).toEqual({ role: 'admin', banned: 0, email_verified: 1 })
    cli(dir, 'set-role', 'root', 'user')
    expect(user().role).toBe('user')
    cli(dir, 'ban', 'root')
    expect(user().banned).toBe(1)
    cli(dir, 'unban', 'root')
    expect(user().banned).toBe(0)
    expect(cli(dir, 'ban', 'nobody').code).toBe(1)
    expect(cli(dir, 'set-role', 'root', 'king').code).toBe(1)
  })
})

describe('backup and restore', () => {
  for (const target of ['dir', 'backup.tar']) {
    test(`a backup taken while the server runs (${target}) restores the same images and rows`, async () => {
      const dest = join(scratch, `b-${target}`)
      const backup = cli(t.dataDir, 'backup', dest)
      expect(backup.code).toBe(0)
      const restoredDir = join(scratch, `restored-${target}`)
      expect(cli(restoredDir, 'restore', dest).code).toBe(0)
      expect(rows(restoredDir)).toEqual(rows(t.dataDir))

      const again = await startTestServer({ DATA_DIR: restoredDir, ...storageOf(restoredDir) })
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
  test('finds a deleted file and a stray file; --repair remakes the thumbnail and removes the stray', async () => {
    const dir = join(scratch, 'check')
    cli(t.dataDir, 'backup', join(scratch, 'check-src'))
    cli(dir, 'restore', join(scratch, 'check-src'))
    expect(cli(dir, 'check').code).toBe(0)

    const storage = storageAt(dir)
    await storage.delete(`thumbs/${uploaded[0].id}.webp`)
    writeFileSync(join(scratch, 'stray'), 'stray')
    await storage.put('originals/ZZZZZZZZ.png', join(scratch, 'stray'))
    const found = cli(dir, 'check')
    expect(found.code).toBe(2)
    const report = JSON.parse(found.out)
    expect(report.missingThumbnails).toEqual([`thumbs/${uploaded[0].id}.webp`])
    expect(report.strayFiles).toEqual(['originals/ZZZZZZZZ.png'])

    const repaired = cli(dir, 'check', '--repair')
    expect(repaired.code).toBe(0)
    expect(JSON.parse(repaired.out).repairedThumbnails).toEqual([`thumbs/${uploaded[0].id}.webp`])
    expect(cli(dir, 'check').code).toBe(0)
  })
})
