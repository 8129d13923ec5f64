import { afterEach, describe, expect, test } from 'bun:test'
import type { ServerOverrides } from '../../src/server'
import { makeImage, uploadForm } from '../fixtures'
import { type TestServer, testClock, userWithKey } from '../helpers'
import { expectWindowResets } from '../windows'
import { dataSnapshot, expectRateLimitHeaders, startServer, uploadImage } from './support'

// The global limiter is in memory and per process: every test here starts its own server, and all traffic is loopback
// from one address (127.0.0.1).
let servers: TestServer[] = []
async function fresh(env: Record<string, string> = {}, overrides: ServerOverrides = {}) {
  const t = await startServer(env, overrides)
  servers.push(t)
  return t
}
afterEach(async () => {
  await Promise.all(servers.map((t) => t.stop()))
  servers = []
})

const statuses = (list: { status: number }[]) => {
  const tally: Record<number, number> = {}
  for (const r of list) tally[r.status] = (tally[r.status] ?? 0) + 1
  return tally
}

describe('bursts from one address', () => {
  test('600 parallel GET /api/gallery: exactly 500 answer 200, the rest 429 with whole-number headers', async () => {
    const t = await fresh()
    const responses = await Promise.all(Array.from({ length: 600 }, () => t.fetch('/api/gallery')))
    const refused = responses.filter((r) => r.status === 429)
    expect(statuses(responses)).toEqual({ 200: 500, 429: 100 })
    for (const res of refused.slice(0, 10)) {
      const h = expectRateLimitHeaders(res.headers, { retryAfter: true })
      expect(h).toMatchObject({ limit: 500, remaining: 0 })
      expect(h.retryAfter).toBeGreaterThan(0)
      expect(h.retryAfter).toBeLessThanOrEqual(60)
      expect(h.reset).toBe(h.retryAfter!)
      const body = await res.json()
      expect(typeof body.error).toBe('string')
    }
    await Promise.all(responses.map((r) => r.body?.cancel().catch(() => {})))
    // Every /api route shares the budget, whatever it is (unknown ones too)...
    for (const path of ['/api/v1/image/abcdefgh', '/api/search?q=x', '/api/nope'])
      expect((await t.fetch(path)).status).toBe(429)
    // ...while pages, files, health and the API docs are not counted and not limited.
    expect((await t.fetch('/healthz')).status).toBe(200)
    expect((await t.fetch('/i/abcdefgh')).status).toBe(404)
    expect((await t.fetch('/cdn/abcdefgh.png')).status).toBe(404)
    expect((await t.fetch('/cdn/medium/abcdefgh.webp')).status).toBe(404)
    expect((await t.fetch('/swagger/json')).status).toBe(200)
  })

  test('the window resets: 429 on its last millisecond, then a full minute from the next request', async () => {
    const clock = testClock(Date.now())
    const t = await fresh({ GLOBAL_RATE_LIMIT: '5' }, { now: clock.now })
    const owner = await userWithKey(t)
    const image = await uploadImage(t, owner.keyHeader)
    // The window of those three requests is over: the walk starts with an unused one.
    clock.set(clock.now() + 60_000)
    let i = 0
    await expectWindowResets(clock, {
      limit: 5,
      windowMs: 60_000,
      headers: false,
      // Taking turns between a route of the app and one Bun answers ahead of it (image metadata): one window for both.
      use: (n) =>
        Promise.all(
          Array.from({ length: n }, async () => {
            const res = await t.fetch(i++ % 2 ? '/api/gallery' : `/api/v1/image/${image.id}`)
            await res.arrayBuffer()
            return res
          }),
        ),
    })
  })

  test('pages, /cdn and /healthz do not use up the API budget', async () => {
    const t = await fresh({ GLOBAL_RATE_LIMIT: '50' })
    const owner = await userWithKey(t) // 2 API requests
    const image = await uploadImage(t, owner.keyHeader) // 1 API request
    const paths = [`/cdn/${image.id}.png`, `/cdn/medium/${image.id}.webp`, `/i/${image.id}`, '/healthz']
    const other = await Promise.all(Array.from({ length: 200 }, (_, i) => t.fetch(paths[i % paths.length])))
    expect(statuses(other)).toEqual({ 200: 200 })
    await Promise.all(other.map((r) => r.body?.cancel().catch(() => {})))
    const api = await Promise.all(Array.from({ length: 60 }, () => t.fetch('/api/gallery')))
    expect(statuses(api)).toEqual({ 200: 47, 429: 13 })
  })

  // These bursts are about the windows: the in-flight caps (4 by default) are raised out of their way.
  const noInFlightCaps = { UPLOADS_IN_FLIGHT_PER_IP: '100', UPLOADS_IN_FLIGHT_PER_ACCOUNT: '100' }

  test('15 parallel anonymous one-file uploads: exactly 10 stored, the rest 429', async () => {
    const t = await fresh(noInFlightCaps)
    const bytes = await Promise.all(Array.from({ length: 15 }, (_, i) => makeImage('png', 16, 16, i + 1)))
    const responses = await Promise.all(
      bytes.map((b) => t.fetch('/api/upload', { method: 'POST', body: uploadForm([{ bytes: b }]) })),
    )
    expect(statuses(responses)).toEqual({ 201: 10, 429: 5 })
    for (const res of responses.filter((r) => r.status === 429))
      expectRateLimitHeaders(res.headers, { retryAfter: true })
    const stored = await dataSnapshot(t)
    expect(stored.counts.images).toBe(10)
    expect(stored.files).toHaveLength(20) // an original and a thumbnail each, and nothing of the refused five
    const again = await t.fetch('/api/upload', { method: 'POST', body: uploadForm([{ bytes: bytes[0] }]) })
    expect(again.status).toBe(429)
  })

  test('30 parallel one-file uploads of one account with a window of 20: exactly 20 stored', async () => {
    const t = await fresh({ UPLOADS_PER_HOUR: '20', ...noInFlightCaps })
    const user = await userWithKey(t)
    const bytes = await Promise.all(Array.from({ length: 30 }, (_, i) => makeImage('png', 16, 16, i + 100)))
    const responses = await Promise.all(
      bytes.map((b, i) =>
        i % 2
          ? t.fetch('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: uploadForm([{ bytes: b }]) })
          : t.fetch('/api/upload', { method: 'POST', headers: user.bearer, body: uploadForm([{ bytes: b }]) }),
      ),
    )
    expect(statuses(responses)).toEqual({ 201: 20, 429: 10 })
    const usage = (await t.json('/api/v1/me', { headers: user.keyHeader })).body
    expect(usage.rateLimit).toMatchObject({ limit: 20, used: 20, remaining: 0 })
    expect(usage.totalImages).toBe(20)
  })
})
