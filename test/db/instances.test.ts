/**
 * Two instances of the app on one PostgreSQL database and one bucket (`npm run test:pg`; skipped on SQLite, where one
 * process owns the database): what one writes the other reads at once, what one deletes or changes the other's caches
 * drop on the change notice (src/db/changes.ts), limits hold across both, and a background job runs in one.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { SQL } from 'bun'
import type { CachedTable, ChangeFeed } from '../../src/db/changes'
import { engine } from '../../src/db/engine'
import type { Classifier, NsfwScores } from '../../src/moderation'
import { makeImage, uploadForm } from '../fixtures'
import {
  eventually,
  jsonBody,
  registerUser,
  startInstancePair,
  startTestServer,
  type TestServer,
  userWithKey,
} from '../helpers'
import { spawnS3Server } from '../s3-server'

const NEUTRAL: NsfwScores = { Porn: 0.01, Hentai: 0.01, Sexy: 0.01, Neutral: 0.95, Drawing: 0.02 }

/** One classifier for both instances: it fails, or answers once released, and counts its calls. */
function gatedClassifier() {
  const state = { failing: true, calls: 0, release: () => {} }
  let gate = Promise.resolve()
  const classifier: Classifier = {
    async classify() {
      state.calls++
      if (state.failing) throw new Error('classifier is down (test)')
      await gate
      return NEUTRAL
    },
    warm: async () => {},
    close: async () => {},
    queueDepth: 0,
  }
  const hold = () => {
    state.failing = false
    gate = new Promise<void>((resolve) => (state.release = resolve))
  }
  return { classifier, state, hold }
}

/** Resolves when `t`'s change feed tells of `key` in `table` (register before the change). */
function notice(t: TestServer, table: CachedTable, key: string) {
  const feed = t.server.deps.changes as ChangeFeed
  return new Promise<void>((resolve) => feed.on(table, (changed) => changed === key && resolve()))
}

describe.skipIf(engine !== 'pg')('two instances on one database and one bucket', () => {
  let s3: Awaited<ReturnType<typeof spawnS3Server>>
  let instances: Awaited<ReturnType<typeof startInstancePair>>
  let a: TestServer
  let b: TestServer
  const scans = gatedClassifier()

  beforeAll(async () => {
    s3 = await spawnS3Server()
    const env = {
      ...s3.env,
      STORAGE: 's3',
      S3_PREFIX: 'instances/',
      GLOBAL_RATE_LIMIT: '100000',
      UPLOADS_IN_FLIGHT_PER_IP: '100',
      ANON_UPLOADS_PER_WINDOW: '10',
      UNVERIFIED_STORAGE_LIMIT: '100000000',
    }
    // The background rescans are run by hand here (runOnce), not on their timers.
    const overrides = { classifier: scans.classifier, rescan: { intervalMs: 3_600_000 } }
    instances = await startInstancePair(env, overrides)
    ;[a, b] = instances.pair
  })

  afterAll(async () => {
    await instances?.stop()
    await s3?.kill()
    rmSync(s3.dir, { recursive: true, force: true })
  })

  const upload = async (t: TestServer, headers: Record<string, string> = {}, seed = 1, path = '/api/v1/upload') => {
    const res = await t.fetch(path, {
      method: 'POST',
      headers,
      body: uploadForm([{ bytes: await makeImage('png', 24, 24, seed) }]),
    })
    return { status: res.status, body: (await res.json()) as any }
  }

  test('an image uploaded through one is read through the other at once: metadata and /cdn', async () => {
    const alice = await userWithKey(a)
    const up = await upload(a, alice.keyHeader, 11)
    expect(up.status).toBe(201)
    const id = up.body.id as string
    const there = await b.json(`/api/v1/image/${id}`)
    expect(there.status).toBe(200)
    expect(there.body.data.size).toBe(up.body.size)
    const direct = new URL(up.body.url).pathname
    const [fromA, fromB] = await Promise.all([a.fetch(direct), b.fetch(direct)])
    expect(fromB.status).toBe(200)
    expect(Buffer.from(await fromB.arrayBuffer())).toEqual(Buffer.from(await fromA.arrayBuffer()))
  })

  test("a delete through one leaves the other's caches with the notice: metadata and /cdn answer 404", async () => {
    const alice = await userWithKey(a)
    const up = await upload(a, alice.keyHeader, 12)
    const id = up.body.id as string
    const direct = new URL(up.body.url).pathname
    // B reads it twice: its live-image cache (and /cdn's answers) hold it now.
    for (let i = 0; i < 2; i++) {
      expect((await b.fetch(direct)).status).toBe(200)
      expect((await b.json(`/api/v1/image/${id}`)).status).toBe(200)
    }
    expect(b.server.services.images.liveCache.has(id)).toBe(true)
    const told = notice(b, 'images', id)
    expect((await a.fetch(`/api/v1/image/${id}`, { method: 'DELETE', headers: alice.keyHeader })).status).toBe(200)
    await told
    expect(b.server.services.images.liveCache.has(id)).toBe(false)
    expect((await b.json(`/api/v1/image/${id}`)).status).toBe(404)
    expect((await b.fetch(direct)).status).toBe(404)
  })

  test('a visibility change through one is what the other shows after the notice', async () => {
    const alice = await userWithKey(a)
    const up = await upload(a, alice.keyHeader, 13)
    const id = up.body.id as string
    expect((await b.json(`/api/v1/image/${id}`)).body.data.visibility).toBe('public')
    const told = notice(b, 'images', id)
    const patched = await a.json(`/api/v1/image/${id}`, {
      method: 'PATCH',
      ...jsonBody({ visibility: 'private' }, alice.keyHeader),
    })
    expect(patched.status).toBe(200)
    await told
    expect((await b.json(`/api/v1/image/${id}`)).body.data.visibility).toBe('private')
  })

  test("a lost change feed empties the other's caches: what changed meanwhile is never served from memory", async () => {
    const alice = await userWithKey(a)
    const up = await upload(a, alice.keyHeader, 15)
    const id = up.body.id as string
    expect((await b.json(`/api/v1/image/${id}`)).status).toBe(200)
    expect(b.server.services.images.liveCache.has(id)).toBe(true)
    // The listening connections are cut (as a network drop would): a notice sent meanwhile may be lost. Each instance
    // empties its caches when its own pings stop coming back, and again once it is subscribed again.
    const admin = new SQL(a.env.DATABASE_URL!)
    await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND query ILIKE 'LISTEN%'`
    await admin.close()
    await eventually(() => !b.server.services.images.liveCache.has(id), 10_000, "B's cache emptied")
    expect((await b.json(`/api/v1/image/${id}`)).status).toBe(200)
  })

  test('a JWT from one works on the other; a logout through one ends it on the other', async () => {
    const bob = await registerUser(a)
    // B checks the session and remembers it as live.
    expect((await b.json('/api/auth/me', { headers: bob.bearer })).status).toBe(200)
    expect((await b.json('/api/auth/me', { headers: bob.bearer })).status).toBe(200)
    const told = new Promise<void>((resolve) => (b.server.deps.changes as ChangeFeed).on('sessions', () => resolve()))
    expect((await a.fetch('/api/auth/logout', { method: 'POST', headers: bob.bearer })).status).toBe(204)
    await told
    expect((await b.json('/api/auth/me', { headers: bob.bearer })).status).toBe(401)
  })

  test('a background rescan runs in one instance: the other skips it while it runs, and finds nothing left after', async () => {
    const up = await upload(a, {}, 900, '/api/upload')
    expect(up.status).toBe(201)
    // The upload's scan failed: the image waits for a rescan.
    const callsAtUpload = scans.state.calls
    scans.hold()
    const first = a.server.rescanner.runOnce()
    while (scans.state.calls === callsAtUpload) await Bun.sleep(10)
    // A's pass holds the job (its classifier call is waiting): B's pass does not start.
    expect(await b.server.rescanner.runOnce()).toEqual({ scanned: 0, failed: 0 })
    expect(scans.state.calls).toBe(callsAtUpload + 1)
    scans.state.release()
    expect((await first).scanned).toBe(1)
    // Nothing pending any more: B's next pass has nothing to classify.
    expect(await b.server.rescanner.runOnce()).toEqual({ scanned: 0, failed: 0 })
    expect(scans.state.calls).toBe(callsAtUpload + 1)
  })
  test('the anonymous window is exact under a burst split across both: twice what is left at once, what is left stored', async () => {
    // What is left of this address's window (an earlier test's anonymous upload counts in it too).
    const left = Number(
      (
        await a.fetch('/api/upload', {
          method: 'POST',
          body: uploadForm([{ bytes: await makeImage('png', 24, 24, 98) }]),
        })
      ).headers.get('ratelimit-remaining'),
    )
    expect(left).toBeGreaterThan(1)
    const answers = await Promise.all(
      Array.from({ length: 2 * left }, (_, i) => upload(i % 2 ? a : b, {}, 100 + i, '/api/upload')),
    )
    const statuses = answers.map((r) => r.status).sort()
    expect(statuses).toEqual([...Array(left).fill(201), ...Array(left).fill(429)])
  })

  test('the global per-IP limit adds up across both: once they have synced, neither admits past it', async () => {
    const instances = await startInstancePair({
      ...s3.env,
      STORAGE: 's3',
      S3_PREFIX: 'global/',
      GLOBAL_RATE_LIMIT: '10',
    })
    const [one, two] = instances.pair
    try {
      const ask = (t: TestServer) => t.fetch('/api/gallery').then((r) => r.status)
      for (let i = 0; i < 8; i++) expect(await ask(one)).toBe(200)
      await one.server.rateLimit.sync()
      // The other instance learns the count at its next sync: its first requests count there too.
      expect(await ask(two)).toBe(200)
      await two.server.rateLimit.sync()
      expect(await ask(two)).toBe(200)
      // 10 in all now: both refuse once they have synced.
      await two.server.rateLimit.sync()
      await one.server.rateLimit.sync()
      expect(await ask(one)).toBe(429)
      expect(await ask(two)).toBe(429)
    } finally {
      await instances.stop()
    }
  })

  test('the storage quota is exact under a burst split across both: 20 at once, exactly what fits is stored', async () => {
    const bytes = await makeImage('png', 24, 24, 500)
    // The stored size of this file, learnt from an instance of its own; then a pair with room for exactly 7 of it.
    const probe = await startTestServer({}, { classifier: scans.classifier })
    const probed = await userWithKey(probe)
    const first = await probe.fetch('/api/v1/upload', {
      method: 'POST',
      headers: probed.keyHeader,
      body: uploadForm([{ bytes }]),
    })
    const size = ((await first.json()) as any).size as number
    await probe.stop()
    const instances = await startInstancePair({
      ...s3.env,
      STORAGE: 's3',
      S3_PREFIX: 'quota/',
      GLOBAL_RATE_LIMIT: '100000',
      UPLOADS_IN_FLIGHT_PER_ACCOUNT: '100',
      UNVERIFIED_STORAGE_LIMIT: String(7 * size + Math.floor(size / 2)),
    })
    const { pair } = instances
    try {
      const carol = await userWithKey(pair[0]!)
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          pair[i % 2]!.fetch('/api/v1/upload', {
            method: 'POST',
            headers: carol.keyHeader,
            body: uploadForm([{ bytes }]),
          }),
        ),
      )
      expect(answers.filter((r) => r.status === 201).length).toBe(7)
      const usage = await pair[1]!.json('/api/account/usage', { headers: carol.bearer })
      expect(usage.body.storage.used).toBe(7 * size)
    } finally {
      await instances.stop()
    }
  })
})
