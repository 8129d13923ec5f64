/**
 * Fault: another process holds the database's write lock for 10 s (issue 17: every request used to wait up to 5 s
 * each in a synchronous busy_timeout, and a failed view flush lost its counts). Now: reads go on, writes answer 503
 * with Retry-After at once, an upload retries its commit for about 2 s off the event loop and then answers 503 with
 * nothing stored, /healthz says 503, every request is answered within the bound, views counted meanwhile are kept and
 * written once the lock goes, and everything works afterwards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { engine } from '../../src/db/engine'
import { type Bytes, makeImage, uploadForm } from '../fixtures'
import { jsonBody, startTestServer, type TestServer, userWithKey } from '../helpers'
import { ANSWER_BOUND_MS, committedViews, dataState, eventually, holdDatabaseLock, timed } from './support'

const TIMEOUT = 60_000
const LOCK_MS = 10_000

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let id: string
let bytes: Bytes

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  bytes = await makeImage('png', 80, 60, 3)
  const up = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes, name: 'before.png' }]),
  })
  expect(up.status).toBe(201)
  id = up.body.id
}, TIMEOUT)
afterAll(() => t?.stop(), TIMEOUT)

// SQLite's file lock (BEGIN EXCLUSIVE in another process, SQLITE_BUSY): PostgreSQL has no database-wide write lock.
describe.skipIf(engine === 'pg')('a write lock held by another process', () => {
  test(
    'reads answer, writes get 503 + Retry-After fast, an upload stores nothing, views are kept; all works after',
    async () => {
      const before = await dataState(t)
      expect(await committedViews(t, id)).toBe(0)
      const lock = await holdDatabaseLock(join(t.dataDir, 'imghost.sqlite'), LOCK_MS)
      const lockedUntil = Date.now() + LOCK_MS

      // /healthz is polled through the whole fault: every answer comes within the bound.
      const health: { status: number; ms: number; retryAfter: string | null }[] = []
      let polling = true
      const poller = (async () => {
        while (polling) {
          const { value, ms } = await timed(() => t.fetch('/healthz'))
          await value.arrayBuffer()
          health.push({ status: value.status, ms, retryAfter: value.headers.get('retry-after') })
          await Bun.sleep(100)
        }
      })()

      // Reads, API-key reads included (the key's lastUsedAt is no longer written on the request).
      const me = await timed(() => t.json('/api/v1/me', { headers: owner.keyHeader }))
      expect(me.value.status).toBe(200)
      expect(me.ms).toBeLessThan(ANSWER_BOUND_MS)
      expect((await t.json(`/api/v1/image/${id}`)).status).toBe(200)
      expect((await t.json('/api/gallery')).status).toBe(200)
      for (let i = 0; i < 5; i++) expect((await t.fetch(`/cdn/${id}.png`)).status).toBe(200)

      // A write: 503 with Retry-After, at once, naming the condition.
      const patch = await timed(() =>
        t.json(`/api/v1/image/${id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }, owner.keyHeader) }),
      )
      expect(patch.value.status).toBe(503)
      expect(patch.value.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(patch.value.body.error).toMatch(/busy|locked/i)
      expect(patch.ms).toBeLessThan(ANSWER_BOUND_MS)

      // An upload: its commit is retried for about 2 s, then 503 with Retry-After, and nothing of it is left.
      const up = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 40, 9), name: 'during.png' }]),
      })
      expect(up.status).toBe(503)
      expect(up.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(up.body.error).toMatch(/busy|locked/i)
      expect(Date.now()).toBeLessThan(lockedUntil) // the refusal came while the lock was still held
      // Nothing half-stored, and the 5 views are still only buffered: at least one flush has failed by now.
      expect(await dataState(t)).toEqual(before)
      expect(await committedViews(t, id)).toBe(0)
      expect((await t.json(`/api/v1/image/${id}`)).body.data.views).toBe(5)

      await lock.released
      polling = false
      await poller
      expect(health.length).toBeGreaterThan(10)
      expect(Math.max(...health.map((h) => h.ms))).toBeLessThan(ANSWER_BOUND_MS)
      const refused = health.filter((h) => h.status === 503)
      expect(refused.length).toBeGreaterThan(0)
      for (const h of refused) expect(h.retryAfter).toMatch(/^\d+$/)
      expect(health.every((h) => h.status === 503 || h.status === 200)).toBe(true)

      // Afterwards: healthy, writes and uploads work, the kept views are written, every file intact.
      await eventually(async () => (await t.fetch('/healthz')).status === 200, 5000, '/healthz ok')
      await eventually(async () => (await committedViews(t, id)) === 5, 10_000, 'the 5 buffered views committed')
      expect(
        (await t.json(`/api/v1/image/${id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }, owner.keyHeader) })).status,
      ).toBe(200)
      const after = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 40, 9), name: 'after.png' }]),
      })
      expect(after.status).toBe(201)
      const state = await dataState(t)
      expect(state.keys).toEqual(
        [...before.keys, `originals/${after.body.id}.png`, `thumbs/${after.body.id}.webp`].sort(),
      )
      expect(state.tmp).toEqual([])
      expect(new Uint8Array(await (await t.fetch(`/cdn/${id}.png`)).arrayBuffer())).toEqual(bytes)
      // The key's use during the lock was kept too and written once it went.
      await eventually(
        async () => (await t.json('/api/keys', { headers: owner.bearer })).body.keys[0].lastUsedAt !== null,
        10_000,
        'lastUsedAt written',
      )
    },
    TIMEOUT,
  )
})
