import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { originalKey, thumbnailKey } from '../../src/storage'
import { makeImage, makeNoisePng, type UploadPart, uploadForm } from '../fixtures'
import {
  eventually,
  jsonBody,
  registerUser,
  startTestServer,
  type TestServer,
  testClock,
  userWithKey,
} from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'

type Account = Awaited<ReturnType<typeof userWithKey>>

const MAX_EXPIRY = 30 * 86400
/** A little over a quarter of what the quota allows: the fourth upload of this size does not fit. */
const QUOTA = 200_000

let t: TestServer
let alice: Account
// The server decides expiry by this clock: tests stop it just before and at an expiry instead of sleeping past one.
const clock = testClock()

beforeAll(async () => {
  t = await startTestServer(
    { TRUST_PROXY: 'true', MAX_EXPIRY: String(MAX_EXPIRY), UNVERIFIED_STORAGE_LIMIT: String(QUOTA) },
    // The sweeper runs here only when a test calls it (its timer is tested on the second server, below), so a 404 in
    // these tests comes from the read-time rule, never from a sweep that happened to run first.
    {
      classifier: fakeClassifier('neutral').classifier,
      rescan: { intervalMs: 3_600_000 },
      expirySweep: { intervalMs: 3_600_000 },
      now: clock.now,
    },
  )
  alice = await userWithKey(t)
})
afterAll(() => t.stop())
afterEach(() => clock.reset())

let seed = 1
const png = () => makeImage('png', 16, 12, seed++)

async function upload(user: Account, fields: Record<string, string> = {}, parts?: UploadPart[]) {
  return t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm(parts ?? [{ bytes: await png() }], fields),
  })
}
async function uploaded(user: Account, fields: Record<string, string> = {}, parts?: UploadPart[]) {
  const res = await upload(user, fields, parts)
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/**
 * Runs `request` and checks the `expiresAt` it answered is exactly `seconds` after a moment the request was handled:
 * between the time just before and just after it (no tolerance to tune, nothing to race; the clocks are running).
 */
async function expectExpiresIn<T extends { body: { expiresAt: string } }>(
  seconds: number,
  request: () => Promise<T>,
): Promise<T> {
  const before = Date.now()
  const res = await request()
  const after = Date.now()
  expect(res.body.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  const at = Date.parse(res.body.expiresAt)
  expect(at).toBeGreaterThanOrEqual(before + seconds * 1000)
  expect(at).toBeLessThanOrEqual(after + seconds * 1000)
  return res
}

/** Moves an image's expiry into the past, as if time had passed; the sweeper has not run yet. */
/** A write by hand, as another instance's would be: PostgreSQL tells this one's caches through a notice, a moment later. */
async function expireNow(id: string) {
  await t.server.db
    .update(images)
    .set({ expiresAt: new Date(Date.now() - 1000) })
    .where(eq(images.id, id))
  await eventually(() => !t.server.services.images.liveCache.has(id), 5000, 'the change notice')
}

const me = async (user: Account) => (await t.json('/api/v1/me', { headers: user.keyHeader })).body
const path = (link: string) => new URL(link).pathname + new URL(link).search

describe('expires on upload', () => {
  test('seconds and ISO 8601 durations set expiresAt; without one it is null', async () => {
    for (const [value, seconds] of [
      ['3600', 3600],
      ['PT10M', 600],
      ['P7D', 7 * 86400],
      ['P1DT2H', 93600],
      [String(MAX_EXPIRY), MAX_EXPIRY],
    ] as const) {
      const res = await expectExpiresIn(seconds, () => upload(alice, { expires: value }))
      expect(res.status).toBe(201)
    }
    expect((await uploaded(alice)).expiresAt).toBeNull()
  })

  test('expiresAt is in every image response: details, list items, every image of a batch', async () => {
    const batch = await uploaded(alice, { expires: 'PT1H' }, [{ bytes: await png() }, { bytes: await png() }])
    expect(batch.images).toHaveLength(2)
    const [first, second] = batch.images
    expect(first.expiresAt).toBe(second.expiresAt)
    const details = (await t.json(`/api/v1/image/${first.id}`)).body.data
    expect(details.expiresAt).toBe(first.expiresAt)
    const list = (await t.json('/api/v1/images?limit=100', { headers: alice.keyHeader })).body.images
    expect(list.find((i: { id: string }) => i.id === first.id).expiresAt).toBe(first.expiresAt)
    const never = await uploaded(alice)
    expect((await t.json(`/api/v1/image/${never.id}`)).body.data.expiresAt).toBeNull()
  })

  test('malformed, zero, negative and above MAX_EXPIRY: 400, nothing stored or counted', async () => {
    const before = await me(alice)
    for (const bad of [
      'abc',
      'P',
      'PT',
      'P1H',
      '1.5',
      '-5',
      '0',
      'PT0S',
      String(MAX_EXPIRY + 1),
      'P31D',
      'P1Y',
      '9'.repeat(30),
    ]) {
      const res = await upload(alice, { expires: bad })
      expect([bad, res.status]).toEqual([bad, 400])
      expect(typeof res.body.error).toBe('string')
    }
    const after = await me(alice)
    expect(after.totalImages).toBe(before.totalImages)
    expect(after.rateLimit.used).toBe(before.rateLimit.used)
  })

  test('the web upload takes the same field', async () => {
    const account = await registerUser(t)
    const form = uploadForm([{ bytes: await png() }], { expires: 'PT30M' })
    const res = await expectExpiresIn(1800, () =>
      t.json('/api/upload', { method: 'POST', headers: account.bearer, body: form }),
    )
    expect(res.status).toBe(201)
    const anon = await t.json('/api/upload', {
      method: 'POST',
      headers: { 'x-forwarded-for': '198.51.100.7' },
      body: uploadForm([{ bytes: await png() }]),
    })
    expect(anon.status).toBe(201)
    expect(anon.body.expiresAt).toBeNull() // ANON_DEFAULT_EXPIRY is 0 (never) by default
    const bad = await t.json('/api/upload', {
      method: 'POST',
      headers: { 'x-forwarded-for': '198.51.100.7' },
      body: uploadForm([{ bytes: await png() }], { expires: 'soon' }),
    })
    expect(bad.status).toBe(400)
  })
})

describe('an expired image is gone everywhere at once, before the sweeper runs', () => {
  test('API, /cdn, thumbnail, viewer, oEmbed, album, gallery, search, profile, list and /me', async () => {
    const owner = await userWithKey(t)
    const word = `expiring${Date.now().toString(36)}`
    const up = await uploaded(owner, { expires: 'P1D', folder: `${word} album` }, [
      { bytes: await png(), name: `${word}.png` },
    ])
    const album = (await t.json('/api/albums', { headers: owner.bearer })).body.albums[0]
    expect(album.isPublic).toBe(true)

    const inFeed = async (feed: string) =>
      ((await t.json(feed)).body.images as { id: string }[]).some((i) => i.id === up.id)
    const checks = {
      details: async () => (await t.fetch(`/api/v1/image/${up.id}`)).status === 200,
      direct: async () => (await t.fetch(path(up.url))).status === 200,
      thumbnail: async () => (await t.fetch(path(up.thumbnail))).status === 200,
      viewer: async () => (await t.fetch(`/i/${up.id}`)).status === 200,
      oembed: async () => (await t.fetch(`/api/oembed?url=${encodeURIComponent(up.viewer)}`)).status === 200,
      albumApi: async () =>
        ((await t.json(`/api/albums/${album.id}`)).body.images as { id: string }[]).some((i) => i.id === up.id),
      albumApiOwner: async () =>
        ((await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })).body.images as { id: string }[]).some(
          (i) => i.id === up.id,
        ),
      albumPage: async () => (await (await t.fetch(`/a/${album.id}`)).text()).includes(up.id),
      gallery: () => inFeed('/api/gallery?limit=40'),
      search: () => inFeed(`/api/search?q=${word}`),
      profile: () => inFeed(`/api/users/${owner.user.username}`),
      list: async () =>
        ((await t.json('/api/v1/images', { headers: owner.keyHeader })).body.images as { id: string }[]).some(
          (i) => i.id === up.id,
        ),
      me: async () => (await me(owner)).totalImages === 1,
      storage: async () => (await me(owner)).storage.used === up.size,
    }
    const run = async () =>
      Object.fromEntries(await Promise.all(Object.entries(checks).map(async ([k, check]) => [k, await check()])))
    const all = (value: boolean) => Object.fromEntries(Object.keys(checks).map((k) => [k, value]))

    expect(await run()).toEqual(all(true))
    await expireNow(up.id)
    expect(await run()).toEqual(all(false))
    expect((await t.json(`/api/v1/image/${up.id}`)).status).toBe(404)
    expect((await t.json(`/api/albums/${album.id}`)).body.album.imageCount).toBe(0)
    // Neither the owner's key nor a delete can touch it any more.
    expect(
      (await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: null }, owner.keyHeader) }))
        .status,
    ).toBe(404)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(404)
  })

  test('time alone expires an image: 200 up to the millisecond before expiresAt, 404 from it, with no write', async () => {
    const up = await uploaded(alice, { expires: '60' })
    const expiresAt = Date.parse(up.expiresAt)
    const statuses = async () => [
      (await t.fetch(path(up.url))).status,
      (await t.fetch(path(up.thumbnail))).status,
      (await t.json(`/api/v1/image/${up.id}`)).status,
      (await t.fetch(`/i/${up.id}`)).status,
      (await t.fetch(`/api/oembed?url=${encodeURIComponent(up.viewer)}`)).status,
    ]
    expect(await statuses()).toEqual([200, 200, 200, 200, 200])
    // Read again at the last live millisecond: the hot routes now answer from the cache, which must check the time.
    clock.set(expiresAt - 1)
    expect(await statuses()).toEqual([200, 200, 200, 200, 200])
    expect(t.server.services.images.liveCache.has(up.id)).toBe(true)
    clock.set(expiresAt)
    expect(await statuses()).toEqual([404, 404, 404, 404, 404])
    // Nothing wrote to the row (a write would have dropped the cached entry): the read-time rule did it alone.
    expect((await t.server.db.select().from(images).where(eq(images.id, up.id)))[0]).toBeDefined()
  })

  test('expired images stop counting against the storage quota at once', async () => {
    const user = await userWithKey(t)
    const bytes = await makeNoisePng(150) // about 68 KB: two fit in the quota, a third does not
    const a = await uploaded(user, {}, [{ bytes }])
    await uploaded(user, {}, [{ bytes: await makeNoisePng(150) }])
    expect((await upload(user, {}, [{ bytes: await makeNoisePng(150) }])).status).toBe(413)
    await expireNow(a.id)
    expect((await me(user)).storage.used).toBeLessThan(QUOTA / 2)
    expect((await upload(user, {}, [{ bytes: await makeNoisePng(150) }])).status).toBe(201)
  })
})

describe('the sweeper', () => {
  test('removes expired images, rows and files, and frees storage; live ones stay', async () => {
    const user = await userWithKey(t)
    const gone = await uploaded(user)
    const kept = await uploaded(user, { expires: 'P1D' })
    const storage = t.server.deps.storage
    const keys = [originalKey(gone.id, 'png'), thumbnailKey(gone.id)]
    for (const key of keys) expect(await storage.exists(key)).toBe(true)
    await expireNow(gone.id)
    expect((await me(user)).storage.used).toBe(kept.size)

    expect(await t.server.services.images.sweepExpired()).toBeGreaterThanOrEqual(1)
    for (const key of keys) expect(await storage.exists(key)).toBe(false)
    expect(await t.server.db.select().from(images).where(eq(images.id, gone.id))).toEqual([])
    expect(await storage.exists(originalKey(kept.id, 'png'))).toBe(true)
    expect((await me(user)).totalImages).toBe(1)
    expect((await me(user)).storage.used).toBe(kept.size)
  })

  test('sweeps what has expired by the clock: an image expiring at that moment goes, one a millisecond later stays', async () => {
    const user = await userWithKey(t)
    const due = await uploaded(user, { expires: '60' })
    const later = await uploaded(user, { expires: '120' })
    // Without an argument the sweep takes the server's clock.
    clock.set(Date.parse(later.expiresAt) - 1)
    expect(await t.server.services.images.sweepExpired()).toBeGreaterThanOrEqual(1)
    expect(await t.server.deps.storage.exists(originalKey(due.id, 'png'))).toBe(false)
    expect(await t.server.deps.storage.exists(originalKey(later.id, 'png'))).toBe(true)
    clock.set(Date.parse(later.expiresAt))
    await t.server.services.images.sweepExpired()
    expect(await t.server.deps.storage.exists(originalKey(later.id, 'png'))).toBe(false)
  })

  test('works through many expired images in chunks (more than one chunk)', async () => {
    const user = await userWithKey(t)
    // 30: past the sweep's chunk of rows a transaction, several times.
    const ids: string[] = []
    for (let b = 0; b < 2; b++) {
      const files = await Promise.all(Array.from({ length: 15 }, async () => ({ bytes: await png() })))
      ids.push(...(await uploaded(user, {}, files)).images.map((i: { id: string }) => i.id))
    }
    for (const id of ids) await expireNow(id)
    expect(await t.server.services.images.sweepExpired()).toBe(30)
    for (const id of ids) expect(await t.server.deps.storage.exists(originalKey(id, 'png'))).toBe(false)
    expect((await me(user)).totalImages).toBe(0)
  })
})

describe('PATCH /api/v1/image/:id expires', () => {
  test('sets an expiry from now (duration or seconds), and null clears it', async () => {
    const up = await uploaded(alice)
    const patch = (expires: unknown) =>
      t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires }, alice.keyHeader) })
    let res = await expectExpiresIn(86400, () => patch('P1D'))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ success: true, id: up.id, visibility: 'public', nsfw: false })
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.expiresAt).toBe(res.body.expiresAt)

    await expectExpiresIn(3600, () => patch(3600))
    await expectExpiresIn(120, () => patch('120'))

    res = await patch(null)
    expect(res.status).toBe(200)
    expect(res.body.expiresAt).toBeNull()
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.expiresAt).toBeNull()
  })

  test('other fields are left alone, and expires alone is enough', async () => {
    const up = await uploaded(alice, { visibility: 'private', expires: 'PT1H' })
    const res = await t.json(`/api/v1/image/${up.id}`, {
      method: 'PATCH',
      ...jsonBody({ nsfw: true }, alice.keyHeader),
    })
    expect(res.body).toEqual({
      success: true,
      id: up.id,
      visibility: 'private',
      nsfw: true,
      expiresAt: up.expiresAt,
      filename: up.filename,
    })
  })

  test('bad values and above MAX_EXPIRY: 400 and nothing changes; not the owner: 404', async () => {
    const up = await uploaded(alice, { expires: 'PT1H' })
    for (const bad of ['soon', 0, -1, 1.5, 'P', MAX_EXPIRY + 1, 'P1Y', true, {}]) {
      const res = await t.json(`/api/v1/image/${up.id}`, {
        method: 'PATCH',
        ...jsonBody({ expires: bad }, alice.keyHeader),
      })
      expect([bad, res.status]).toEqual([bad, 400])
    }
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.expiresAt).toBe(up.expiresAt)
    const bob = await userWithKey(t)
    expect(
      (await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: null }, bob.keyHeader) }))
        .status,
    ).toBe(404)
  })

  test('shortening the expiry to one second makes the image disappear a second later', async () => {
    const up = await uploaded(alice)
    const res = await expectExpiresIn(1, () =>
      t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: 1 }, alice.keyHeader) }),
    )
    clock.set(Date.parse(res.body.expiresAt) - 1)
    expect((await t.fetch(path(up.url))).status).toBe(200)
    clock.set(Date.parse(res.body.expiresAt))
    expect((await t.fetch(path(up.url))).status).toBe(404)
  })
})

describe('ANON_DEFAULT_EXPIRY; the sweeper on its timer', () => {
  let anonServer: TestServer
  const anonClock = testClock()
  beforeAll(async () => {
    anonServer = await startTestServer(
      { TRUST_PROXY: 'true', ANON_DEFAULT_EXPIRY: '600' },
      {
        classifier: fakeClassifier('neutral').classifier,
        rescan: { intervalMs: 3_600_000 },
        expirySweep: { intervalMs: 250 },
        now: anonClock.now,
      },
    )
  })
  afterAll(() => anonServer.stop())
  afterEach(() => anonClock.reset())

  let ip = 1
  const anon = async (fields: Record<string, string> = {}) =>
    anonServer.json('/api/upload', {
      method: 'POST',
      headers: { 'x-forwarded-for': `203.0.113.${ip++}` },
      body: uploadForm([{ bytes: await png() }], fields),
    })

  test('anonymous uploads that give none get it; shorter ones are allowed, longer ones are 400', async () => {
    const plain = await expectExpiresIn(600, () => anon())
    expect(plain.status).toBe(201)
    await expectExpiresIn(300, () => anon({ expires: 'PT5M' }))
    const longer = await anon({ expires: 'PT11M' })
    expect(longer.status).toBe(400)
    expect(longer.body.error).toContain('anonymous')
  })

  test('accounts are not affected', async () => {
    const user = await userWithKey(anonServer)
    const res = await anonServer.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: await png() }]),
    })
    expect(res.body.expiresAt).toBeNull()
    const form = uploadForm([{ bytes: await png() }], { expires: 'P2D' })
    const web = await expectExpiresIn(2 * 86400, () =>
      anonServer.json('/api/upload', { method: 'POST', headers: user.bearer, body: form }),
    )
    expect(web.status).toBe(201)
  })

  test('the server sweeps on its own timer: once an image has expired, its files and row go without a call', async () => {
    const user = await userWithKey(anonServer)
    const res = await anonServer.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: await png() }], { expires: '60' }),
    })
    expect(res.status).toBe(201)
    const key = originalKey(res.body.id, 'png')
    expect(await anonServer.server.deps.storage.exists(key)).toBe(true)
    anonClock.set(Date.parse(res.body.expiresAt))
    await eventually(async () => !(await anonServer.server.deps.storage.exists(key)), undefined, 'the timed sweep')
    expect(await anonServer.server.db.select().from(images).where(eq(images.id, res.body.id))).toEqual([])
  })
})

describe('/swagger/json', () => {
  test('documents expires on both upload endpoints and in PATCH, and expiresAt in the responses', async () => {
    const doc = (await t.json('/swagger/json')).body
    for (const route of ['/api/v1/upload', '/api/upload']) {
      const form = doc.paths[route].post.requestBody.content['multipart/form-data'].schema
      expect(form.properties.expires.description).toContain('ISO 8601')
    }
    const text = JSON.stringify(doc.paths['/api/v1/image/{id}'])
    expect(text).toContain('expiresAt')
    expect(text).toContain('expires')
    expect(JSON.stringify(doc.paths['/api/v1/images'])).toContain('expiresAt')
  })
})
