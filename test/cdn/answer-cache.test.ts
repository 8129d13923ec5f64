import { afterAll, afterEach, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { makeImage, uploadForm } from '../fixtures'
import { eventually, jsonBody, startTestServer, type TestServer, testClock, userWithKey } from '../helpers'
import { writeBehindCaches } from '../other-connection'

// /cdn answers from the in-memory cache of live images (src/modules/images/live-cache.ts): every test first makes /cdn
// answer (so the image is cached), checks it is, then changes the image and expects the new answer at once. Without
// invalidation each would still get the cached 200.

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let seed = 0
// Expiry is decided by this clock: the expiry tests stop it at the moment instead of sleeping past it.
const clock = testClock()

beforeAll(async () => {
  t = await startTestServer({ METRICS_TOKEN: 'cache-test-token', LOG_REQUESTS: 'true' }, { now: clock.now })
  owner = await userWithKey(t)
})
afterAll(() => t.stop())
afterEach(() => clock.reset())

const cache = () => t.server.services.images.liveCache
const path = (url: string) => new URL(url).pathname

async function uploaded(fields: Record<string, string> = {}) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 40, 30, ++seed) }], fields),
  })
  expect(res.status).toBe(201)
  return res.body as { id: string; url: string; thumbnail: string; expiresAt: string; deleteToken?: string }
}

/** Serves the original and the thumbnail (200) and checks the image is now cached. */
async function servedAndCached(up: { id: string; url: string; thumbnail: string }) {
  expect((await t.fetch(path(up.url))).status).toBe(200)
  expect((await t.fetch(path(up.thumbnail))).status).toBe(200)
  expect(cache().has(up.id)).toBe(true)
}

async function gone(up: { id: string; url: string; thumbnail: string }) {
  for (const p of [path(up.url), path(up.thumbnail)]) {
    expect((await t.fetch(p)).status).toBe(404)
    expect((await t.fetch(p, { method: 'HEAD' })).status).toBe(404)
  }
  expect(cache().has(up.id)).toBe(false)
}

describe('/cdn answer cache: invalidation', () => {
  test('a cached image is served from the cache (a second request reads no row)', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    // A write through another connection is the one change the cache is not told of (docs/operations.md: the CLI works on a stopped
    // server): had the request read the row, it would answer with the new type.
    await writeBehindCaches(t, 'UPDATE images SET mime = $1 WHERE id = $2', ['image/x-elsewhere', up.id])
    expect((await t.fetch(path(up.url))).headers.get('content-type')).toBe('image/png')
  })

  test('deleted by the owner: 404 at once, original and thumbnail', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(200)
    await gone(up)
  })

  test('deleted through the service (admin, reports and the sweeper use the same remove)', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    await t.server.services.images.remove({ id: up.id, ext: 'png' })
    await gone(up)
  })

  test('a delete racing reads: no read that starts after the delete answered is served', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    let stop = false
    let reads = 0
    const readers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        await (await t.fetch(path(up.url))).arrayBuffer()
        reads++
      }
    })
    // The delete comes while the readers are busy: each has had at least one answer.
    await eventually(() => reads >= 8, undefined, 'the readers to start')
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(200)
    const after = await Promise.all(Array.from({ length: 16 }, () => t.fetch(path(up.url)).then((r) => r.status)))
    stop = true
    await Promise.all(readers)
    expect(after).toEqual(Array(16).fill(404))
    expect(cache().has(up.id)).toBe(false)
  })

  test('expiry: a cached image stops being served the moment it expires, before any sweep', async () => {
    const up = await uploaded({ expires: '60' })
    clock.set(Date.parse(up.expiresAt) - 1)
    await servedAndCached(up)
    clock.set(Date.parse(up.expiresAt))
    await gone(up)
  })

  test('PATCH shortening the expiry of a cached image', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    const patched = await t.json(`/api/v1/image/${up.id}`, {
      method: 'PATCH',
      ...jsonBody({ expires: 1 }, owner.keyHeader),
    })
    expect(patched.status).toBe(200)
    expect(cache().has(up.id)).toBe(false)
    clock.set(Date.parse(patched.body.expiresAt) - 1)
    expect((await t.fetch(path(up.url))).status).toBe(200)
    clock.set(Date.parse(patched.body.expiresAt))
    await gone(up)
  })

  test('PATCH visibility: the entry is rebuilt, and a private image is still served by its link', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    expect(
      (
        await t.json(`/api/v1/image/${up.id}`, {
          method: 'PATCH',
          ...jsonBody({ visibility: 'private' }, owner.keyHeader),
        })
      ).status,
    ).toBe(200)
    expect(cache().has(up.id)).toBe(false)
    await servedAndCached(up)
  })

  test('any write to the row through the database, not only the service (here: expired by hand)', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    await t.server.db
      .update(images)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(images.id, up.id))
    // PostgreSQL tells the caches at commit, through the change feed: a moment later.
    await eventually(() => !cache().has(up.id), 5000, 'the change notice')
    await gone(up)
  })

  test('a row whose answer changed by hand is answered anew (type and size from the row)', async () => {
    const up = await uploaded()
    await servedAndCached(up)
    await t.server.db.update(images).set({ mime: 'image/x-test' }).where(eq(images.id, up.id))
    await eventually(() => !cache().has(up.id), 5000, 'the change notice')
    const res = await t.fetch(path(up.url))
    expect(res.headers.get('content-type')).toBe('image/x-test')
  })

  test('unknown and malformed ids are not cached', async () => {
    // (That malformed ids never reach a query: test/security/traversal.test.ts, which watches every statement.)
    expect((await t.fetch('/cdn/ZZZZZZZZ.png')).status).toBe(404)
    expect((await t.fetch('/cdn/a%27b.png')).status).toBe(404)
    expect(cache().has('ZZZZZZZZ')).toBe(false)
    expect(cache().has("a'b")).toBe(false)
  })
})

describe('/cdn small files from memory (src/modules/cdn/hot-files.ts)', () => {
  // Only local disk keeps files in memory; an object store is asked on every request.
  test.skipIf(process.env.STORAGE === 's3')(
    'after the first answers a small file comes from memory: same bytes, ranges, HEAD; a deleted image is 404',
    async () => {
      const up = await uploaded()
      const p = path(up.url)
      const original = new Uint8Array(await (await t.fetch(p)).arrayBuffer())
      await (await t.fetch(p)).arrayBuffer()
      await Bun.sleep(50)
      // Removed from disk by hand, not through the service: only memory can still answer.
      rmSync(join(t.dataDir, 'files', 'originals', `${up.id}.png`))
      const again = await t.fetch(p)
      expect(again.status).toBe(200)
      expect(again.headers.get('content-length')).toBe(String(original.byteLength))
      expect(new Uint8Array(await again.arrayBuffer())).toEqual(original)
      const range = await t.fetch(p, { headers: { range: 'bytes=2-9' } })
      expect(range.status).toBe(206)
      expect(new Uint8Array(await range.arrayBuffer())).toEqual(original.slice(2, 10))
      const head = await t.fetch(p, { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect((await head.arrayBuffer()).byteLength).toBe(0)
      // Deleted through the service: 404 at once, though its bytes are still in memory.
      expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(200)
      expect((await t.fetch(p)).status).toBe(404)
    },
  )
})

describe('fast paths (/cdn, image metadata): request log and metrics', () => {
  test('one log line per /cdn request, in the shape of every other route, and counted in the metrics', async () => {
    const up = await uploaded()
    const lines: string[] = []
    const spy = spyOn(console, 'log').mockImplementation((line: unknown) => void lines.push(String(line)))
    try {
      await t.fetch(path(up.url))
      await t.fetch(path(up.thumbnail), { method: 'HEAD' })
      await t.fetch('/cdn/ZZZZZZZZ.png')
      await t.fetch(`/api/v1/image/${up.id}`)
      await eventually(
        () => lines.filter((l) => l.includes('"msg":"request"')).length >= 4,
        undefined,
        'the four log lines',
      )
    } finally {
      spy.mockRestore()
    }
    const entries = lines.map((l) => JSON.parse(l)).filter((e) => e.msg === 'request')
    const api = entries.find((e) => e.route === '/api/v1/image/:id')
    const original = entries.filter((e) => e.route === '/cdn/:file')
    const thumb = entries.find((e) => e.route === '/cdn/medium/:file')
    expect(original.map((e) => e.status).sort()).toEqual([200, 404])
    expect(original.find((e) => e.status === 200).bytes).toBe(
      (await t.server.deps.storage.stat(`originals/${up.id}.png`))!.size,
    )
    expect(thumb).toMatchObject({ method: 'HEAD', status: 200 })
    expect(api.bytes).toBeGreaterThan(0)
    for (const e of [...original, thumb]) expect(Object.keys(e).sort()).toEqual(Object.keys(api).sort())

    const metrics = await (await t.fetch('/metrics', { headers: { authorization: 'Bearer cache-test-token' } })).text()
    expect(metrics).toMatch(/http_requests_total\{route="\/cdn\/:file",method="GET",status="200"\} [1-9]/)
    expect(metrics).toMatch(/http_requests_total\{route="\/cdn\/medium\/:file",method="HEAD",status="200"\} [1-9]/)
  })
})
