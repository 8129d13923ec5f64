import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { makeAdmin, startTestServer, type TestServer, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'

type Account = Awaited<ReturnType<typeof userWithKey>>
type FeedImage = { id: string; username: string | null; nsfw: boolean; created_at: string }

const FEED_KEYS = [
  'created_at',
  'height',
  'id',
  'mime',
  'nsfw',
  'thumbnail',
  'url',
  'username',
  'viewer',
  'views',
  'width',
]

const fake = fakeClassifier('neutral')
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ TRUST_PROXY: 'true' }, { classifier: fake.classifier, rescan: { intervalMs: 3_600_000 } })
})
afterAll(() => t.stop())

let seed = 100
const png = () => makeImage('png', 16, 12, seed++)

async function apiUpload(user: Account, parts: UploadPart[], fields: Record<string, string> = {}) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm(parts, fields),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

let ip = 1
async function anonUpload(parts: UploadPart[], fields: Record<string, string> = {}) {
  const res = await t.json('/api/upload', {
    method: 'POST',
    headers: { 'x-forwarded-for': `100.64.0.${ip++}` },
    body: uploadForm(parts, fields),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

const ids = (body: { images: FeedImage[] }) => body.images.map((i) => i.id)

describe('visibility rules', () => {
  let alice: Account
  let bob: Account
  const seen: Record<string, string> = {}

  beforeAll(async () => {
    alice = await userWithKey(t)
    bob = await userWithKey(t)
    seen.public = (await apiUpload(alice, [{ bytes: await png(), name: 'vis-public.png' }])).id
    seen.private = (
      await apiUpload(alice, [{ bytes: await png(), name: 'vis-private.png' }], { visibility: 'private' })
    ).id
    seen.nsfw = (await apiUpload(alice, [{ bytes: await png(), name: 'vis-nsfw.png' }], { nsfw: 'true' })).id
    seen.anonymous = (await anonUpload([{ bytes: await png(), name: 'vis-anonymous.png' }])).id
    fake.state.mode = 'throw'
    seen.pending = (await anonUpload([{ bytes: await png(), name: 'vis-pending.png' }])).id
    seen.alicePending = (
      await t.json('/api/upload', {
        method: 'POST',
        headers: alice.bearer,
        body: uploadForm([{ bytes: await png(), name: 'vis-alice-pending.png' }]),
      })
    ).body.id
    fake.state.mode = 'neutral'
    seen.banned = (await apiUpload(bob, [{ bytes: await png(), name: 'vis-banned.png' }])).id
    await t.server.services.admin.updateUser(bob.user.id, { banned: true })
  })

  test('the gallery shows public, safe, scanned images of non-banned owners, anonymous ones included', async () => {
    const res = await t.json('/api/gallery')
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(ids(res.body).sort()).toEqual([seen.public, seen.anonymous].sort())
    expect(res.body).toMatchObject({ page: 1, total: 2, totalPages: 1 })
  })

  test('elements carry the documented fields', async () => {
    const res = await t.json('/api/gallery')
    const byId = Object.fromEntries(res.body.images.map((i: FeedImage) => [i.id, i]))
    const own = byId[seen.public]
    expect(Object.keys(own).sort()).toEqual(FEED_KEYS)
    expect(own).toMatchObject({
      id: seen.public,
      url: `${t.url}/cdn/${seen.public}.png`,
      thumbnail: `${t.url}/cdn/medium/${seen.public}.webp`,
      viewer: `${t.url}/i/${seen.public}`,
      width: 16,
      height: 12,
      mime: 'image/png',
      views: 0,
      username: alice.user.username,
      nsfw: false,
    })
    expect(own.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(byId[seen.anonymous].username).toBeNull()
  })

  test('search applies the same rules', async () => {
    const res = await t.json('/api/search?q=vis')
    expect(res.status).toBe(200)
    expect(ids(res.body).sort()).toEqual([seen.public, seen.anonymous].sort())
    for (const hidden of ['private', 'nsfw', 'pending', 'banned']) {
      expect((await t.json(`/api/search?q=vis-${hidden}`)).body.total).toBe(0)
    }
  })

  test("the profile lists the user's public images, NSFW ones flagged, private and pending ones left out", async () => {
    const res = await t.json(`/api/users/${alice.user.username}`)
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.user).toEqual({ username: alice.user.username, createdAt: alice.user.createdAt, publicImages: 2 })
    expect(res.body).toMatchObject({ page: 1, totalPages: 1, total: 2 })
    expect(res.body.images.map((i: FeedImage) => [i.id, i.nsfw])).toEqual([
      [seen.nsfw, true],
      [seen.public, false],
    ])
    for (const image of res.body.images) expect(Object.keys(image).sort()).toEqual(FEED_KEYS)
    // The username matches case-insensitively and the canonical spelling is returned.
    const upper = await t.json(`/api/users/${alice.user.username.toUpperCase()}`)
    expect(upper.status).toBe(200)
    expect(upper.body.user.username).toBe(alice.user.username)
  })

  test('unknown and banned users: 404 with an error', async () => {
    for (const name of ['nobody-here', bob.user.username, '%', 'a'.repeat(300)]) {
      const res = await t.json(`/api/users/${encodeURIComponent(name)}`)
      expect(res.status).toBe(404)
      expect(typeof res.body.error).toBe('string')
    }
  })

  test('unbanning brings the images back; making an image private takes it out', async () => {
    await t.server.services.admin.updateUser(bob.user.id, { banned: false })
    expect(ids((await t.json('/api/gallery')).body)).toContain(seen.banned)
    expect((await t.json(`/api/users/${bob.user.username}`)).status).toBe(200)
    const patch = await t.json(`/api/v1/image/${seen.banned}`, {
      method: 'PATCH',
      headers: { ...bob.keyHeader, 'content-type': 'application/json' },
      body: JSON.stringify({ visibility: 'private' }),
    })
    expect(patch.status).toBe(200)
    expect(ids((await t.json('/api/gallery')).body)).not.toContain(seen.banned)
    expect((await t.json(`/api/users/${bob.user.username}`)).body.total).toBe(0)
  })
})

describe('paging', () => {
  let paged: TestServer
  let uploaded: string[] = []
  let owner = ''

  beforeAll(async () => {
    paged = await startTestServer({}, { classifier: fakeClassifier().classifier, rescan: { intervalMs: 3_600_000 } })
    const admin = await userWithKey(paged)
    await makeAdmin(paged, admin.user.id)
    owner = admin.user.username
    const parts = await Promise.all(
      Array.from({ length: 45 }, async (_, i) => ({ bytes: await makeImage('png', 8, 8, i), name: `p${i}.png` })),
    )
    const res = await paged.json('/api/v1/upload', {
      method: 'POST',
      headers: admin.keyHeader,
      body: uploadForm(parts),
    })
    expect(res.status).toBe(201)
    uploaded = res.body.images.map((i: { id: string }) => i.id)
  })
  afterAll(() => paged.stop())

  const newestFirst = () => [...uploaded].reverse()

  test('newest first, 20 per page by default', async () => {
    const res = await paged.json('/api/gallery')
    expect(res.body).toMatchObject({ page: 1, totalPages: 3, total: 45 })
    expect(ids(res.body)).toEqual(newestFirst().slice(0, 20))
    const third = await paged.json('/api/gallery?page=3')
    expect(third.body).toMatchObject({ page: 3, totalPages: 3, total: 45 })
    expect(ids(third.body)).toEqual(newestFirst().slice(40))
    const times = res.body.images.map((i: FeedImage) => Date.parse(i.created_at))
    expect([...times].sort((a, b) => b - a)).toEqual(times)
  })

  test('limit above 40 is clamped to 40', async () => {
    for (const limit of [41, 100, 1000000]) {
      const res = await paged.json(`/api/gallery?limit=${limit}`)
      expect(res.status).toBe(200)
      expect(res.body.images).toHaveLength(40)
      expect(res.body.totalPages).toBe(2)
    }
    const exact = await paged.json('/api/gallery?limit=40&page=2')
    expect(ids(exact.body)).toEqual(newestFirst().slice(40))
  })

  test('totalPages = ceil(total / limit); a page past the end is empty', async () => {
    expect((await paged.json('/api/gallery?limit=7')).body.totalPages).toBe(7)
    expect((await paged.json('/api/gallery?limit=45')).body.totalPages).toBe(2)
    expect((await paged.json('/api/gallery?limit=1')).body.totalPages).toBe(45)
    const past = await paged.json('/api/gallery?page=99')
    expect(past.status).toBe(200)
    expect(past.body).toMatchObject({ images: [], page: 99, total: 45, totalPages: 3 })
  })

  test('search and profile page the same way', async () => {
    for (const feed of ['/api/search?q=p&', `/api/users/${owner}?`]) {
      const first = await paged.json(`${feed}limit=50`)
      expect(first.status, feed).toBe(200)
      expect(first.body, feed).toMatchObject({ page: 1, total: 45, totalPages: 2 })
      expect(ids(first.body), feed).toEqual(newestFirst().slice(0, 40))
      const second = await paged.json(`${feed}limit=50&page=2`)
      expect(second.body, feed).toMatchObject({ page: 2, total: 45, totalPages: 2 })
      expect(ids(second.body), feed).toEqual(newestFirst().slice(40))
    }
    const profile = await paged.json(`/api/users/${owner}?limit=7`)
    expect(profile.body).toMatchObject({ total: 45, totalPages: 7 })
    expect(profile.body.user.publicImages).toBe(45)
  })

  test('scanned web uploads and unscanned API uploads interleave newest first across pages', async () => {
    const admin = await userWithKey(paged)
    const mixed: string[] = []
    for (let i = 0; i < 6; i++) {
      const body = uploadForm([{ bytes: await makeImage('png', 8, 8, 100 + i), name: `mixed${i}.png` }])
      const res =
        i % 2 === 0
          ? await paged.json('/api/v1/upload', { method: 'POST', headers: admin.keyHeader, body })
          : await paged.json('/api/upload', { method: 'POST', body })
      expect(res.status).toBe(201)
      mixed.unshift(res.body.id)
    }
    const pages: string[] = []
    for (let page = 1; page <= 4; page++)
      pages.push(...ids((await paged.json(`/api/gallery?limit=2&page=${page}`)).body))
    expect(pages).toEqual([...mixed, ...newestFirst().slice(0, 2)])
    expect(ids((await paged.json('/api/gallery?limit=3&page=2')).body)).toEqual(mixed.slice(3, 6))
    expect((await paged.json('/api/gallery')).body.total).toBe(51)
    uploaded.push(...[...mixed].reverse())
  })

  test('an empty gallery has totalPages 0', async () => {
    const empty = await startTestServer({}, { classifier: fakeClassifier().classifier })
    try {
      const res = await empty.json('/api/gallery')
      expect(res.body).toEqual({ success: true, images: [], page: 1, totalPages: 0, total: 0, asOf: 0 })
    } finally {
      await empty.stop()
    }
  })

  test('bad page or limit: 400 with an error, on every feed', async () => {
    expect((await paged.json(`/api/users/${owner}`)).status).toBe(200)
    for (const path of ['/api/gallery?', '/api/search?q=p&', `/api/users/${owner}?`]) {
      for (const bad of ['0', '-1', 'abc', '1.5', '1e3', ' 2', '0x10']) {
        for (const name of ['page', 'limit']) {
          const res = await paged.json(`${path}${name}=${encodeURIComponent(bad)}`)
          expect(res.status).toBe(400)
          expect(typeof res.body.error).toBe('string')
        }
      }
    }
  })
})
