import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { originalKey, thumbnailKey } from '../../src/storage'
import { makeImage, makeNoisePng, uploadForm, type UploadPart } from '../fixtures'
import { jsonBody, registerUser, startTestServer, userWithKey, type TestServer } from '../helpers'
import { fakeClassifier } from '../webupload/fake-classifier'

type Account = Awaited<ReturnType<typeof userWithKey>>

const MAX_EXPIRY = 30 * 86400
/** A little over a quarter of what the quota allows: the fourth upload of this size does not fit. */
const QUOTA = 200_000

let t: TestServer
let alice: Account

beforeAll(async () => {
  t = await startTestServer(
    { TRUST_PROXY: 'true', MAX_EXPIRY: String(MAX_EXPIRY), UNVERIFIED_STORAGE_LIMIT: String(QUOTA) },
    // The sweeper runs on its own every 250 ms here; most tests expire images directly in the database instead.
    { classifier: fakeClassifier('neutral').classifier, rescan: { intervalMs: 3_600_000 }, expirySweep: { intervalMs: 250 } },
  )
  alice = await userWithKey(t)
})
afterAll(() => t.stop())

let seed = 1
const png = () => makeImage('png', 16, 12, seed++)

async function upload(user: Account, fields: Record<string, string> = {}, parts?: UploadPart[]) {
  return t.json('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: uploadForm(parts ?? [{ bytes: await png() }], fields) })
}
async function uploaded(user: Account, fields: Record<string, string> = {}, parts?: UploadPart[]) {
  const res = await upload(user, fields, parts)
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** Seconds from now until an ISO timestamp. */
const secondsUntil = (iso: string) => (Date.parse(iso) - Date.now()) / 1000

/** Moves an image's expiry into the past, as if time had passed; the sweeper has not run yet. */
function expireNow(id: string) {
  t.server.db.update(images).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(images.id, id)).run()
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
      const body = await uploaded(alice, { expires: value })
      expect(typeof body.expiresAt).toBe('string')
      expect(body.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect(Math.abs(secondsUntil(body.expiresAt) - seconds)).toBeLessThan(5)
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
    for (const bad of ['abc', 'P', 'PT', 'P1H', '1.5', '-5', '0', 'PT0S', String(MAX_EXPIRY + 1), 'P31D', 'P1Y', '9'.repeat(30)]) {
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
    const res = await t.json('/api/upload', { method: 'POST', headers: account.bearer, body: uploadForm([{ bytes: await png() }], { expires: 'PT30M' }) })
    expect(res.status).toBe(201)
    expect(Math.abs(secondsUntil(res.body.expiresAt) - 1800)).toBeLessThan(5)
    const anon = await t.json('/api/upload', { method: 'POST', headers: { 'x-forwarded-for': '198.51.100.7' }, body: uploadForm([{ bytes: await png() }]) })
    expect(anon.status).toBe(201)
    expect(anon.body.expiresAt).toBeNull() // ANON_DEFAULT_EXPIRY is 0 (never) by default
    const bad = await t.json('/api/upload', { method: 'POST', headers: { 'x-forwarded-for': '198.51.100.7' }, body: uploadForm([{ bytes: await png() }], { expires: 'soon' }) })
    expect(bad.status).toBe(400)
  })
})

describe('an expired image is gone everywhere at once, before the sweeper runs', () => {
  test('API, /cdn, thumbnail, viewer, oEmbed, album, gallery, search, profile, list and /me', async () => {
    const owner = await userWithKey(t)
    const word = `expiring${Date.now().toString(36)}`
    const up = await uploaded(owner, { expires: 'P1D', folder: `${word} album` }, [{ bytes: await png(), name: `${word}.png` }])
    const album = (await t.json('/api/albums', { headers: owner.bearer })).body.albums[0]
    expect(album.isPublic).toBe(true)

    const inFeed = async (feed: string) => ((await t.json(feed)).body.images as { id: string }[]).some((i) => i.id === up.id)
    const checks = {
      details: async () => (await t.fetch(`/api/v1/image/${up.id}`)).status === 200,
      direct: async () => (await t.fetch(path(up.url))).status === 200,
      thumbnail: async () => (await t.fetch(path(up.thumbnail))).status === 200,
      viewer: async () => (await t.fetch(`/i/${up.id}`)).status === 200,
      oembed: async () => (await t.fetch(`/api/oembed?url=${encodeURIComponent(up.viewer)}`)).status === 200,
      albumApi: async () => ((await t.json(`/api/albums/${album.id}`)).body.images as { id: string }[]).some((i) => i.id === up.id),
      albumApiOwner: async () => ((await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })).body.images as { id: string }[]).some((i) => i.id === up.id),
      albumPage: async () => (await (await t.fetch(`/a/${album.id}`)).text()).includes(up.id),
      gallery: () => inFeed('/api/gallery?limit=40'),
      search: () => inFeed(`/api/search?q=${word}`),
      profile: () => inFeed(`/api/users/${owner.user.username}`),
      list: async () => ((await t.json('/api/v1/images', { headers: owner.keyHeader })).body.images as { id: string }[]).some((i) => i.id === up.id),
      me: async () => (await me(owner)).totalImages === 1,
      storage: async () => (await me(owner)).storage.used === up.size,
    }
    const run = async () => Object.fromEntries(await Promise.all(Object.entries(checks).map(async ([k, check]) => [k, await check()])))
    const all = (value: boolean) => Object.fromEntries(Object.keys(checks).map((k) => [k, value]))

    expect(await run()).toEqual(all(true))
    expireNow(up.id)
    expect(await run()).toEqual(all(false))
    expect((await t.json(`/api/v1/image/${up.id}`)).status).toBe(404)
    expect((await t.json(`/api/albums/${album.id}`)).body.album.imageCount).toBe(0)
    // Neither the owner's key nor a delete can touch it any more.
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: null }, owner.keyHeader) })).status).toBe(404)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(404)
  })

  test('a one-second expiry: 200 now, 404 a moment later', async () => {
    const up = await uploaded(alice, { expires: '1' })
    expect((await t.fetch(path(up.url))).status).toBe(200)
    await Bun.sleep(1200)
    expect((await t.fetch(path(up.url))).status).toBe(404)
    expect((await t.json(`/api/v1/image/${up.id}`)).status).toBe(404)
    expect((await t.fetch(`/i/${up.id}`)).status).toBe(404)
  })

  test('expired images stop counting against the storage quota at once', async () => {
    const user = await userWithKey(t)
    const bytes = await makeNoisePng(150) // about 68 KB: two fit in the quota, a third does not
    const a = await uploaded(user, {}, [{ bytes }])
    await uploaded(user, {}, [{ bytes: await makeNoisePng(150) }])
    expect((await upload(user, {}, [{ bytes: await makeNoisePng(150) }])).status).toBe(413)
    expireNow(a.id)
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
    expireNow(gone.id)
    expect((await me(user)).storage.used).toBe(kept.size)

    expect(await t.server.services.images.sweepExpired()).toBeGreaterThanOrEqual(1)
    for (const key of keys) expect(await storage.exists(key)).toBe(false)
    expect(t.server.db.select().from(images).where(eq(images.id, gone.id)).get()).toBeUndefined()
    expect(await storage.exists(originalKey(kept.id, 'png'))).toBe(true)
    expect((await me(user)).totalImages).toBe(1)
    expect((await me(user)).storage.used).toBe(kept.size)
  })

  test('runs on its own timer in the server', async () => {
    const up = await uploaded(alice, { expires: '1' })
    const key = originalKey(up.id, 'png')
    expect(await t.server.deps.storage.exists(key)).toBe(true)
    const deadline = Date.now() + 5000
    while (Date.now() < deadline && (await t.server.deps.storage.exists(key))) await Bun.sleep(100)
    expect(await t.server.deps.storage.exists(key)).toBe(false)
    expect(t.server.db.select().from(images).where(eq(images.id, up.id)).get()).toBeUndefined()
  })

  test('works through many expired images in chunks', async () => {
    const user = await userWithKey(t)
    const batch = await uploaded(user, {}, await Promise.all(Array.from({ length: 12 }, async () => ({ bytes: await png() }))))
    const ids: string[] = batch.images.map((i: { id: string }) => i.id)
    for (const id of ids) expireNow(id)
    await t.server.services.images.sweepExpired()
    for (const id of ids) expect(await t.server.deps.storage.exists(originalKey(id, 'png'))).toBe(false)
    expect((await me(user)).totalImages).toBe(0)
  })
})

describe('PATCH /api/v1/image/:id expires', () => {
  test('sets an expiry from now (duration or seconds), and null clears it', async () => {
    const up = await uploaded(alice)
    let res = await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: 'P1D' }, alice.keyHeader) })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ success: true, id: up.id, visibility: 'public', nsfw: false })
    expect(Math.abs(secondsUntil(res.body.expiresAt) - 86400)).toBeLessThan(5)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.expiresAt).toBe(res.body.expiresAt)

    res = await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: 3600 }, alice.keyHeader) })
    expect(Math.abs(secondsUntil(res.body.expiresAt) - 3600)).toBeLessThan(5)
    res = await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: '120' }, alice.keyHeader) })
    expect(Math.abs(secondsUntil(res.body.expiresAt) - 120)).toBeLessThan(5)

    res = await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: null }, alice.keyHeader) })
    expect(res.status).toBe(200)
    expect(res.body.expiresAt).toBeNull()
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.expiresAt).toBeNull()
  })

  test('other fields are left alone, and expires alone is enough', async () => {
    const up = await uploaded(alice, { visibility: 'private', expires: 'PT1H' })
    const res = await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }, alice.keyHeader) })
    expect(res.body).toEqual({ success: true, id: up.id, visibility: 'private', nsfw: true, expiresAt: up.expiresAt })
  })

  test('bad values and above MAX_EXPIRY: 400 and nothing changes; not the owner: 404', async () => {
    const up = await uploaded(alice, { expires: 'PT1H' })
    for (const bad of ['soon', 0, -1, 1.5, 'P', MAX_EXPIRY + 1, 'P1Y', true, {}]) {
      const res = await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: bad }, alice.keyHeader) })
      expect([bad, res.status]).toEqual([bad, 400])
    }
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.expiresAt).toBe(up.expiresAt)
    const bob = await userWithKey(t)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: null }, bob.keyHeader) })).status).toBe(404)
  })

  test('shortening the expiry to one second makes the image disappear', async () => {
    const up = await uploaded(alice)
    await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ expires: 1 }, alice.keyHeader) })
    await Bun.sleep(1200)
    expect((await t.fetch(path(up.url))).status).toBe(404)
  })
})

describe('ANON_DEFAULT_EXPIRY', () => {
  let anonServer: TestServer
  beforeAll(async () => {
    anonServer = await startTestServer(
      { TRUST_PROXY: 'true', ANON_DEFAULT_EXPIRY: '600' },
      { classifier: fakeClassifier('neutral').classifier, rescan: { intervalMs: 3_600_000 } },
    )
  })
  afterAll(() => anonServer.stop())

  let ip = 1
  const anon = async (fields: Record<string, string> = {}) =>
    anonServer.json('/api/upload', { method: 'POST', headers: { 'x-forwarded-for': `203.0.113.${ip++}` }, body: uploadForm([{ bytes: await png() }], fields) })

  test('anonymous uploads that give none get it; shorter ones are allowed, longer ones are 400', async () => {
    const plain = await anon()
    expect(plain.status).toBe(201)
    expect(Math.abs(secondsUntil(plain.body.expiresAt) - 600)).toBeLessThan(5)
    const shorter = await anon({ expires: 'PT5M' })
    expect(Math.abs(secondsUntil(shorter.body.expiresAt) - 300)).toBeLessThan(5)
    const longer = await anon({ expires: 'PT11M' })
    expect(longer.status).toBe(400)
    expect(longer.body.error).toContain('anonymous')
  })

  test('accounts are not affected', async () => {
    const user = await userWithKey(anonServer)
    const res = await anonServer.json('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: uploadForm([{ bytes: await png() }]) })
    expect(res.body.expiresAt).toBeNull()
    const web = await anonServer.json('/api/upload', { method: 'POST', headers: user.bearer, body: uploadForm([{ bytes: await png() }], { expires: 'P2D' }) })
    expect(web.status).toBe(201)
    expect(Math.abs(secondsUntil(web.body.expiresAt) - 2 * 86400)).toBeLessThan(5)
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
