/**
 * Fault: a full disk (issue 17: every upload answered a bare 500). The data directory is a small tmpfs filled up for
 * real, and so is the file store on a tmpfs of its own; the database row's write meets SQLite's own "full" (its page
 * limit, the same SQLITE_FULL a full disk gives once the write-ahead log must grow). Each answers 507 naming the
 * condition, leaves nothing behind (no row, no stored file, no temp file), and once space is back everything works
 * and the earlier image is intact.
 *
 * Mounting needs root (CAP_SYS_ADMIN): where it is refused, the test is skipped with the reason.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { engine } from '../../src/db/engine'
import { makeImage, makeNoisePng, uploadForm } from '../fixtures'
import { sqliteOf, startTestServer, type TestServer, userWithKey } from '../helpers'
import { dataState, eventually } from './support'

const TIMEOUT = 60_000

const root = mkdtempSync(join(tmpdir(), 'imghost-diskfull-'))
const dataDir = join(root, 'data')
const filesDir = join(dataDir, 'files')
const mounted: string[] = []
let refused = ''
let t: TestServer | undefined
let owner: Awaited<ReturnType<typeof userWithKey>>

function mount(dir: string, size: string): boolean {
  mkdirSync(dir, { recursive: true })
  const run = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stderr: 'pipe' })
  if (run.exitCode !== 0) {
    refused = run.stderr.toString().trim() || `mount exited ${run.exitCode}`
    return false
  }
  mounted.unshift(dir)
  return true
}

/** Writes zeros into `path` until the file system says it is full. */
function fill(path: string) {
  const run = Bun.spawnSync(['dd', 'if=/dev/zero', `of=${path}`, 'bs=256K'], { stderr: 'pipe' })
  expect(run.stderr.toString()).toContain('No space left on device')
}

const upload = (headers: Record<string, string>, name: string, seed: number, path = '/api/v1/upload') =>
  makeImage('png', 64, 64, seed).then((bytes) =>
    t!.json(path, { method: 'POST', headers, body: uploadForm([{ bytes, name }]) }),
  )

beforeAll(async () => {
  if (!mount(dataDir, '24m') || !mount(filesDir, '4m')) return
  t = await startTestServer({ DATA_DIR: dataDir })
  owner = await userWithKey(t)
}, TIMEOUT)
afterAll(async () => {
  await t?.server.stop()
  // Lazily: the closed database's descriptors go only when its prepared statements are collected.
  for (const dir of mounted) Bun.spawnSync(['umount', '-l', dir])
  rmSync(root, { recursive: true, force: true })
}, TIMEOUT)

describe('a full disk', () => {
  test(
    'data directory full: uploads 507 "storage is full" with nothing left behind, /healthz 503; all works after',
    async () => {
      if (!t) return console.warn(`skipped: cannot mount a tmpfs (${refused}); this test needs root`)
      const bytes = await makeImage('png', 80, 60, 1)
      const first = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes, name: 'before.png' }]),
      })
      expect(first.status).toBe(201)
      // Views counted by earlier tests are written now, not by the periodic flush in the middle of this one.
      await t.server.services.images.flushViews()
      const before = await dataState(t)
      // A healthy verdict stands 10 s: the refused uploads below must end it.
      expect((await t.fetch('/healthz')).status).toBe(200)

      const filler = join(dataDir, 'filler')
      fill(filler)
      try {
        for (const [path, headers] of [
          ['/api/v1/upload', owner.keyHeader],
          ['/api/upload', {}],
        ] as const) {
          const up = await upload(headers, 'full.png', 2, path)
          expect(up.status).toBe(507)
          expect(up.body.error).toBe("The server's storage is full; nothing was stored")
        }
        expect(await dataState(t)).toEqual(before)
        const health = await t.json('/healthz')
        expect(health.status).toBe(503)
        expect(health.body.error).toMatch(/storage is full/)
        // Reads go on.
        expect((await t.json(`/api/v1/image/${first.body.id}`)).status).toBe(200)
      } finally {
        rmSync(filler, { force: true })
      }

      await eventually(async () => (await t!.fetch('/healthz')).status === 200, 5000, '/healthz ok')
      const after = await upload(owner.keyHeader, 'after.png', 3)
      expect(after.status).toBe(201)
      expect(new Uint8Array(await (await t.fetch(`/cdn/${first.body.id}.png`)).arrayBuffer())).toEqual(bytes)
    },
    TIMEOUT,
  )

  test(
    'a resumable (tus) upload on a full disk: PATCH 507 "storage is full", what the disk took kept; it resumes once there is room',
    async () => {
      if (!t) return console.warn(`skipped: cannot mount a tmpfs (${refused}); this test needs root`)
      const tus = { 'tus-resumable': '1.0.0' }
      const png = await makeNoisePng(160)
      const created = await t.fetch('/api/v1/tus', {
        method: 'POST',
        headers: { ...tus, ...owner.keyHeader, 'upload-length': String(png.length) },
      })
      expect(created.status).toBe(201)
      const url = created.headers.get('location')!
      const patch = (offset: number, bytes: Uint8Array) =>
        fetch(url, {
          method: 'PATCH',
          headers: {
            ...tus,
            ...owner.keyHeader,
            'content-type': 'application/offset+octet-stream',
            'upload-offset': String(offset),
          },
          body: bytes as Uint8Array<ArrayBuffer>,
        })
      const offsetNow = async () =>
        Number(
          (await fetch(url, { method: 'HEAD', headers: { ...tus, ...owner.keyHeader } })).headers.get('upload-offset'),
        )
      const half = Math.floor(png.length / 2)
      expect((await patch(0, png.slice(0, half))).status).toBe(204)

      const filler = join(dataDir, 'filler')
      fill(filler)
      try {
        const refusedPatch = await patch(half, png.slice(half))
        expect(refusedPatch.status).toBe(507)
        expect((await refusedPatch.json()).error).toBe("The server's storage is full; nothing was stored")
      } finally {
        rmSync(filler, { force: true })
      }
      // What was received stays (the first half, and whatever part of the second the disk took): the client resumes
      // from the offset the server gives, as tus clients do.
      const at = await offsetNow()
      expect(at).toBeGreaterThanOrEqual(half)
      expect(at).toBeLessThan(png.length)
      const done = await patch(at, png.slice(at))
      expect(done.status).toBe(200)
      const image = await done.json()
      expect(new Uint8Array(await (await t.fetch(new URL(image.url).pathname)).arrayBuffer())).toEqual(png)
    },
    TIMEOUT,
  )

  test(
    'a size first requested on a full disk: 507 "storage is full", no temp file left; made once there is room',
    async () => {
      if (!t) return console.warn(`skipped: cannot mount a tmpfs (${refused}); this test needs root`)
      const image = await upload(owner.keyHeader, 'variant.png', 9)
      expect(image.status).toBe(201)
      const filler = join(dataDir, 'filler')
      fill(filler)
      try {
        for (const path of [`/cdn/large/${image.body.id}.jpg`, `/cdn/small/${image.body.id}.webp`]) {
          const res = await t.json(path)
          expect({ path, status: res.status }).toEqual({ path, status: 507 })
          expect(res.body.error).toBe("The server's storage is full; nothing was stored")
        }
        expect(readdirSync(join(dataDir, 'tmp'))).toEqual([])
      } finally {
        rmSync(filler, { force: true })
      }
      const made = await t.fetch(`/cdn/large/${image.body.id}.jpg`)
      expect(made.status).toBe(200)
      expect(made.headers.get('content-type')).toBe('image/jpeg')
    },
    TIMEOUT,
  )

  test(
    'file store full: the put fails, 507, and neither a stored file nor a half copy nor a row is left',
    async () => {
      if (!t) return console.warn(`skipped: cannot mount a tmpfs (${refused}); this test needs root`)
      // With STORAGE=s3 the file store is the bucket (test/storage/s3.test.ts covers one that fails).
      if (t.server.deps.config.storage.driver !== 'local') return
      // Views counted by earlier tests are written now, not by the periodic flush in the middle of this one.
      await t.server.services.images.flushViews()
      const before = await dataState(t)
      const filler = join(filesDir, 'filler')
      fill(filler)
      try {
        const up = await upload(owner.keyHeader, 'store-full.png', 4)
        expect(up.status).toBe(507)
        expect(up.body.error).toBe("The server's storage is full; nothing was stored")
        expect(await dataState(t)).toEqual(before)
        // The copy across file systems (temp files live on another one here) left no `.partial` behind.
        for (const dir of ['originals', 'thumbs'])
          expect(readdirSync(join(filesDir, dir)).filter((n) => n.endsWith('.partial'))).toEqual([])
      } finally {
        rmSync(filler, { force: true })
      }
      expect((await upload(owner.keyHeader, 'store-after.png', 5)).status).toBe(201)
    },
    TIMEOUT,
  )

  // SQLite's own "full" (its page limit on the file): a PostgreSQL server's database is not in the data directory.
  test.skipIf(engine === 'pg')(
    'database full when the row is written: 507, and the files already stored for it are removed',
    async () => {
      if (!t) return console.warn(`skipped: cannot mount a tmpfs (${refused}); this test needs root`)
      const sqlite = sqliteOf(t.server.db).$client
      // Views counted by earlier tests are written now, not by the periodic flush in the middle of this one.
      await t.server.services.images.flushViews()
      const before = await dataState(t)
      // No page may be added to the database file: the next write that needs one fails with SQLITE_FULL.
      const { page_count } = sqlite.query('PRAGMA page_count').get() as { page_count: number }
      sqlite.exec(`PRAGMA max_page_count = ${page_count}`)
      let refusedUpload: Awaited<ReturnType<typeof upload>> | undefined
      try {
        for (let i = 0; i < 30 && !refusedUpload; i++) {
          const up = await upload(owner.keyHeader, `row-${'x'.repeat(200)}-${i}.png`, 10 + i)
          if (up.status === 507) refusedUpload = up
          else expect(up.status).toBe(201)
        }
      } finally {
        sqlite.exec('PRAGMA max_page_count = 4294967294')
      }
      expect(refusedUpload?.body.error).toBe("The server's storage is full; nothing was stored")
      // Whatever went in before the refusal is whole (row and files); the refused one left neither.
      const now = await dataState(t)
      const newIds = now.rows.map((r) => r.id).filter((id) => !before.rows.some((r) => r.id === id))
      expect(now.keys).toEqual(
        [...before.keys, ...newIds.flatMap((id) => [`originals/${id}.png`, `thumbs/${id}.webp`])].sort(),
      )
      expect(now.tmp).toEqual([])
      expect((await upload(owner.keyHeader, 'row-after.png', 50)).status).toBe(201)
    },
    TIMEOUT,
  )
})
