import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { startServer as startAppServer } from '../../src/server'
import { makeImage, makeNoisePng, type UploadPart, uploadForm } from '../fixtures'
import { databaseEnv, dropDatabase, makeAdmin, type TestServer, userWithKey } from '../helpers'
import { expectError, expectRateLimitHeaders, neutralClassifier, startServer } from './support'

// Upload windows: 5 per account per hour, 3 anonymous uploads per window; small enough to hit with small files.
const WINDOW = 5
const ANON = 3
let t: TestServer
let q: TestServer

beforeAll(async () => {
  t = await startServer({
    UPLOADS_PER_HOUR: String(WINDOW),
    MAX_FILES_PER_UPLOAD: '5',
    ANON_UPLOADS_PER_WINDOW: String(ANON),
  })
  // The quota server: a window wide enough that only the storage quota can refuse.
  q = await startServer({
    UPLOADS_PER_HOUR: '100',
    MAX_FILE_SIZE: '20000',
    MAX_FILES_PER_UPLOAD: '3',
    UNVERIFIED_STORAGE_LIMIT: '60000',
  })
})
afterAll(async () => {
  await t.stop()
  await q.stop()
})

const small = (seed: number) => makeImage('png', 8, 8, seed)
async function files(n: number): Promise<UploadPart[]> {
  return Promise.all(Array.from({ length: n }, async (_, i) => ({ bytes: await small(i + 1), name: `f${i}.png` })))
}
type Who = Awaited<ReturnType<typeof userWithKey>>
const viaKey = async (s: TestServer, who: Who, parts: UploadPart[]) =>
  s.fetch('/api/v1/upload', { method: 'POST', headers: who.keyHeader, body: uploadForm(parts) })
const viaWeb = async (s: TestServer, who: Who, parts: UploadPart[]) =>
  s.fetch('/api/upload', { method: 'POST', headers: who.bearer, body: uploadForm(parts) })
const me = async (s: TestServer, who: Who) => (await s.json('/api/v1/me', { headers: who.keyHeader })).body

describe('the hourly upload window, shared by both upload endpoints', () => {
  test('counted per file across /api/v1/upload (key) and /api/upload (JWT); headers and /me agree with what is enforced', async () => {
    const user = await userWithKey(t)
    const first = await viaKey(t, user, await files(2))
    expect(first.status).toBe(201)
    const h1 = expectRateLimitHeaders(first.headers, { retryAfter: false })
    expect(h1).toMatchObject({ limit: WINDOW, remaining: 3 })
    expect(h1.reset).toBeGreaterThan(3590)
    expect(h1.reset).toBeLessThanOrEqual(3600)
    let usage = await me(t, user)
    expect(usage.rateLimit).toMatchObject({ window: '1 hour', limit: WINDOW, used: 2, remaining: 3 })
    expect(Math.abs(usage.rateLimit.resetSeconds - h1.reset)).toBeLessThanOrEqual(1)

    const second = await viaWeb(t, user, await files(2))
    expect(second.status).toBe(201)
    expect(expectRateLimitHeaders(second.headers, { retryAfter: false })).toMatchObject({ limit: WINDOW, remaining: 1 })
    usage = await me(t, user)
    expect(usage.rateLimit).toMatchObject({ used: 4, remaining: 1 })

    // Two files do not fit in the one left, on either endpoint: 429 with every header, nothing counted.
    for (const attempt of [viaKey, viaWeb]) {
      const refused = await attempt(t, user, await files(2))
      expect(refused.status).toBe(429)
      expect(typeof (await refused.json()).error).toBe('string')
      const h = expectRateLimitHeaders(refused.headers, { retryAfter: true })
      expect(h).toMatchObject({ limit: WINDOW, remaining: 1 })
      expect(h.retryAfter).toBeGreaterThan(0)
      expect(Math.abs(h.retryAfter! - h.reset)).toBeLessThanOrEqual(1)
    }
    expect((await me(t, user)).rateLimit).toMatchObject({ used: 4, remaining: 1 })

    // The last one fits; then the window is full for both endpoints, and /me says so.
    const last = await viaWeb(t, user, await files(1))
    expect(last.status).toBe(201)
    expect(last.headers.get('RateLimit-Remaining')).toBe('0')
    usage = await me(t, user)
    expect(usage.rateLimit).toMatchObject({ used: 5, remaining: 0 })
    for (const attempt of [viaKey, viaWeb]) {
      const refused = await attempt(t, user, await files(1))
      expect(refused.status).toBe(429)
      const h = expectRateLimitHeaders(refused.headers, { retryAfter: true })
      expect(h.remaining).toBe(0)
      expect(Math.abs(h.retryAfter! - usage.rateLimit.resetSeconds)).toBeLessThanOrEqual(2)
    }
    expect(usage.totalImages).toBe(5)
  })

  test('the dashboard usage endpoint (JWT) reports the same window as /api/v1/me', async () => {
    const user = await userWithKey(t)
    expect((await viaKey(t, user, await files(3))).status).toBe(201)
    const usage = await t.json('/api/account/usage', { headers: user.bearer })
    expect(usage.status).toBe(200)
    expect(usage.body.rateLimit).toMatchObject({ limit: WINDOW, used: 3, remaining: 2 })
  })

  test('admins are exempt (but counted, so /me still reports usage)', async () => {
    const admin = await userWithKey(t)
    await makeAdmin(t, admin.user.id)
    expect((await viaKey(t, admin, await files(5))).status).toBe(201)
    expect((await viaWeb(t, admin, await files(3))).status).toBe(201)
    const usage = await me(t, admin)
    expect(usage.rateLimit.used).toBe(8)
    expect(usage.rateLimit.remaining).toBe(0)
    expect((await viaKey(t, admin, await files(1))).status).toBe(201)
  })

  test('parallel batches on the two endpoints (key + JWT) can never overshoot the window', async () => {
    for (let round = 0; round < 3; round++) {
      const user = await userWithKey(t)
      const [a, b] = await Promise.all([viaKey(t, user, await files(3)), viaWeb(t, user, await files(3))])
      expect([a.status, b.status].sort()).toEqual([201, 429])
      const usage = await me(t, user)
      expect(usage.rateLimit.used).toBe(3)
      expect(usage.totalImages).toBe(3)
    }
  })

  test('parallel batches on the two endpoints (key + JWT) can never overshoot the storage quota', async () => {
    const file = await makeNoisePng(70)
    expect(file.length).toBeLessThan(20_000)
    // Each batch of three fits alone (3 × ~15 KB ≤ 60 KB); both together do not.
    expect(3 * file.length).toBeLessThanOrEqual(60_000)
    expect(6 * file.length).toBeGreaterThan(60_000)
    for (let round = 0; round < 3; round++) {
      const user = await userWithKey(q)
      const parts = Array.from({ length: 3 }, (_, i) => ({ bytes: file, name: `n${i}.png` }))
      const [a, b] = await Promise.all([viaKey(q, user, parts), viaWeb(q, user, parts)])
      expect([a.status, b.status].sort()).toEqual([201, 413])
      const usage = await me(q, user)
      expect(usage.storage.used).toBe(3 * file.length)
      expect(usage.storage.used).toBeLessThanOrEqual(60_000)
      expect(usage.totalImages).toBe(3)
      expect(usage.rateLimit.used).toBe(3)
    }
  })
})

describe('anonymous uploads: per IP', () => {
  test(`${ANON} per window per IP; the 429 carries every header; success carries the window's headers`, async () => {
    // Everything in this file comes from 127.0.0.1, and no other test here uploads anonymously.
    for (let i = 0; i < ANON; i++) {
      const res = await t.fetch('/api/upload', { method: 'POST', body: uploadForm(await files(1)) })
      expect(res.status).toBe(201)
      expect(expectRateLimitHeaders(res.headers, { retryAfter: false })).toMatchObject({
        limit: ANON,
        remaining: ANON - 1 - i,
      })
    }
    const refused = await t.fetch('/api/upload', { method: 'POST', body: uploadForm(await files(1)) })
    expect(refused.status).toBe(429)
    expectError({ status: refused.status, body: await refused.json() }, 429)
    const h = expectRateLimitHeaders(refused.headers, { retryAfter: true })
    expect(h).toMatchObject({ limit: ANON, remaining: 0 })
    expect(h.retryAfter).toBeGreaterThan(0)
    expect(h.retryAfter).toBeLessThanOrEqual(600)
    // A logged-in web upload from the same address uses the account's window, not the address's.
    const user = await userWithKey(t)
    expect((await viaWeb(t, user, await files(1))).status).toBe(201)
  })
})

describe('upload windows survive a restart (they live in the database)', () => {
  test('an account window and an anonymous window, across a stop and a start on the same DATA_DIR', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-restart-'))
    // PostgreSQL runs: one database of its own, kept across the restart.
    const database = await databaseEnv()
    const env = {
      ...database,
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_REQUESTS: 'false',
      JWT_SECRET: 'restart-secret-'.padEnd(48, 'x'),
      UPLOADS_PER_HOUR: String(WINDOW),
      ANON_UPLOADS_PER_WINDOW: String(ANON),
    }
    const start = async () => {
      const server = await startAppServer(loadConfig(env), { classifier: neutralClassifier })
      const url = `http://localhost:${server.port}`
      const facade = {
        url,
        dataDir,
        server,
        fetch: (path: string, init?: RequestInit) => fetch(url + path, init),
        json: async (path: string, init?: RequestInit) => {
          const res = await fetch(url + path, init)
          return { status: res.status, body: (await res.json()) as any, headers: res.headers }
        },
        stop: () => server.stop(),
      }
      return facade as unknown as TestServer
    }
    try {
      let s = await start()
      const user = await userWithKey(s)
      expect((await viaKey(s, user, await files(3))).status).toBe(201)
      for (let i = 0; i < ANON - 1; i++)
        expect((await s.fetch('/api/upload', { method: 'POST', body: uploadForm(await files(1)) })).status).toBe(201)
      const before = (await me(s, user)).rateLimit
      await s.server.stop()

      s = await start()
      try {
        const after = (await me(s, user)).rateLimit
        expect(after).toMatchObject({ limit: WINDOW, used: 3, remaining: 2 })
        expect(after.resetSeconds).toBeLessThanOrEqual(before.resetSeconds)
        expect(after.resetSeconds).toBeGreaterThan(before.resetSeconds - 30)
        // Three more do not fit in the two left; two do.
        expect((await viaKey(s, user, await files(3))).status).toBe(429)
        expect((await viaWeb(s, user, await files(2))).status).toBe(201)
        expect((await viaKey(s, user, await files(1))).status).toBe(429)
        // The anonymous window kept its count too: one left.
        expect((await s.fetch('/api/upload', { method: 'POST', body: uploadForm(await files(2)) })).status).toBe(429)
        expect((await s.fetch('/api/upload', { method: 'POST', body: uploadForm(await files(1)) })).status).toBe(201)
        expect((await s.fetch('/api/upload', { method: 'POST', body: uploadForm(await files(1)) })).status).toBe(429)
      } finally {
        await s.server.stop()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
      await dropDatabase(database)
    }
  })
})
