import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { loadConfig } from '../../src/config'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { registerUser, startTestServer, storedKeys, type TestServer, testClock, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'
import { expectWindowResets } from '../windows'

// The classifier is faked here (its verdicts are not what these tests are about); scan.test.ts uses the real model.
let t: TestServer
const fake = fakeClassifier('neutral')
const clock = testClock(Date.now())

beforeAll(async () => {
  t = await startTestServer(
    { TRUST_PROXY: 'true' },
    { classifier: fake.classifier, rescan: { intervalMs: 3_600_000 }, now: clock.now },
  )
})
afterAll(() => t.stop())

let ipCounter = 1
/** A fresh client address, so each test has its own anonymous window. */
const newIp = () => `203.0.113.${ipCounter++}`

const png = (seed = 0) => makeImage('png', 32, 24, seed)

function webUpload(
  parts: UploadPart[],
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
  ip = newIp(),
) {
  return t.json('/api/upload', {
    method: 'POST',
    headers: { 'x-forwarded-for': ip, ...headers },
    body: uploadForm(parts, fields),
  })
}

const storedFiles = async (server = t) => (await storedKeys(server)).length
const ids = (feed: { body: { images: { id: string }[] } }) => feed.body.images.map((i) => i.id)

const UPLOADED_KEYS = [
  'delete',
  'deletePage',
  'deleteToken',
  'height',
  'id',
  'mime',
  'nsfw',
  'size',
  'thumbnail',
  'url',
  'viewer',
  'visibility',
  'width',
]

describe('anonymous web upload: responses', () => {
  test('one file: 201, the flat shape of /api/v1/upload, plus a delete token', async () => {
    const bytes = await png(1)
    const res = await webUpload([{ bytes, name: 'one.png' }])
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    for (const key of UPLOADED_KEYS) expect(res.body).toHaveProperty(key)
    expect(res.body).toMatchObject({
      mime: 'image/png',
      width: 32,
      height: 24,
      size: bytes.length,
      visibility: 'public',
      nsfw: false,
    })
    expect(res.body.id).toMatch(/^[A-Za-z0-9]{8}$/)
    expect(res.body.url).toBe(`${t.url}/cdn/${res.body.id}.png`)
    expect(res.body.thumbnail).toBe(`${t.url}/cdn/medium/${res.body.id}.webp`)
    expect(res.body.viewer).toBe(`${t.url}/i/${res.body.id}`)
    expect(res.body.delete).toBe(`${t.url}/api/v1/image/${res.body.id}`)
    expect(typeof res.body.deleteToken).toBe('string')
    expect(res.body.deleteToken.length).toBeGreaterThanOrEqual(16)
    expect(res.headers.get('ratelimit-limit')).toBe('10')
    expect(res.headers.get('ratelimit-remaining')).toBe('9')
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0)

    const details = await t.json(`/api/v1/image/${res.body.id}`)
    expect(details.status).toBe(200)
    expect(details.body.data).toMatchObject({ id: res.body.id, visibility: 'public', nsfw: false })
  })

  test('several files: { success, images }, each with its own delete token', async () => {
    const res = await webUpload([{ bytes: await png(2) }, { bytes: await png(3) }, { bytes: await png(4) }])
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    expect(res.body.id).toBeUndefined()
    expect(res.body.images).toHaveLength(3)
    for (const image of res.body.images) {
      for (const key of UPLOADED_KEYS) expect(image).toHaveProperty(key)
      expect(image.success).toBeUndefined()
    }
    expect(new Set(res.body.images.map((i: { deleteToken: string }) => i.deleteToken)).size).toBe(3)
    expect(res.headers.get('ratelimit-remaining')).toBe('7')
  })

  test('DELETE with X-Delete-Token removes it; a wrong or foreign token is 404; no credential is 401', async () => {
    const a = (await webUpload([{ bytes: await png(5) }])).body
    const b = (await webUpload([{ bytes: await png(6) }])).body
    const del = (id: string, headers: Record<string, string>) =>
      t.json(`/api/v1/image/${id}`, { method: 'DELETE', headers })

    const wrong = await del(a.id, { 'x-delete-token': 'not-the-token' })
    expect(wrong.status).toBe(404)
    expect(typeof wrong.body.error).toBe('string')
    expect((await del(a.id, { 'x-delete-token': b.deleteToken })).status).toBe(404)
    expect((await del(a.id, {})).status).toBe(401)
    expect((await t.json(`/api/v1/image/${a.id}`)).status).toBe(200)

    const ok = await del(a.id, { 'x-delete-token': a.deleteToken })
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ success: true })
    expect((await t.json(`/api/v1/image/${a.id}`)).status).toBe(404)
    expect((await t.fetch(`/cdn/${a.id}.png`)).status).toBe(404)
    expect((await del(a.id, { 'x-delete-token': a.deleteToken })).status).toBe(404)
    // The other upload is untouched.
    expect((await t.json(`/api/v1/image/${b.id}`)).status).toBe(200)
  })

  test("a user's explicit nsfw=true stands (the scan never clears it)", async () => {
    const res = await webUpload([{ bytes: await png(7) }], { nsfw: 'true' })
    expect(res.status).toBe(201)
    expect(res.body.nsfw).toBe(true)
  })
})

describe('anonymous web upload: request rules', () => {
  test('6 files: 400, nothing stored or counted', async () => {
    const ip = newIp()
    const before = await storedFiles()
    const small = await png(8)
    const res = await webUpload(
      Array.from({ length: 6 }, () => ({ bytes: small })),
      {},
      {},
      ip,
    )
    expect(res.status).toBe(400)
    expect(typeof res.body.error).toBe('string')
    expect(await storedFiles()).toBe(before)
    // The window is untouched: 5 files still fit.
    const five = await webUpload(
      Array.from({ length: 5 }, (_, i) => ({ bytes: small, name: `f${i}.png` })),
      {},
      {},
      ip,
    )
    expect(five.status).toBe(201)
    expect(five.headers.get('ratelimit-remaining')).toBe('5')
  })

  test('album or folder on an anonymous upload: 400', async () => {
    for (const field of ['album', 'folder']) {
      const res = await webUpload([{ bytes: await png(9) }], { [field]: 'Holiday' })
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
    }
  })

  test('visibility other than public/private: 400; private is honoured', async () => {
    for (const visibility of ['PUBLIC', 'secret', 'unlisted']) {
      const res = await webUpload([{ bytes: await png(10) }], { visibility })
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
    }
    const res = await webUpload([{ bytes: await png(11) }], { visibility: 'private' })
    expect(res.status).toBe(201)
    expect(res.body.visibility).toBe('private')
    const shorthand = await webUpload([{ bytes: await png(12) }], { private: 'yes' })
    expect(shorthand.body.visibility).toBe('private')
  })

  test('not an image: 400', async () => {
    const res = await webUpload([
      { bytes: new TextEncoder().encode('plain text, not an image'), name: 'x.png', type: 'image/png' },
    ])
    expect(res.status).toBe(400)
    expect(typeof res.body.error).toBe('string')
  })
})

describe('anonymous rate limit: 10 uploads per 10 minutes per IP', () => {
  test('the 11th upload is 429 with Retry-After and RateLimit-*; another IP still passes', async () => {
    const ip = newIp()
    const bytes = await png(13)
    for (let i = 0; i < 10; i++) {
      const res = await webUpload([{ bytes, name: `n${i}.png` }], {}, {}, ip)
      expect(res.status).toBe(201)
      expect(res.headers.get('ratelimit-remaining')).toBe(String(9 - i))
    }
    const before = await storedFiles()
    const limited = await webUpload([{ bytes }], {}, {}, ip)
    expect(limited.status).toBe(429)
    expect(typeof limited.body.error).toBe('string')
    const retryAfter = Number(limited.headers.get('retry-after'))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(600)
    expect(limited.headers.get('ratelimit-limit')).toBe('10')
    expect(limited.headers.get('ratelimit-remaining')).toBe('0')
    expect(Number(limited.headers.get('ratelimit-reset'))).toBeGreaterThan(0)
    expect(await storedFiles()).toBe(before)

    const other = await webUpload([{ bytes }], {}, {}, newIp())
    expect(other.status).toBe(201)
  })

  test('a batch that does not fit in what is left: 429, and a smaller one still fits', async () => {
    const ip = newIp()
    const bytes = await png(14)
    const batch = (n: number) =>
      webUpload(
        Array.from({ length: n }, (_, i) => ({ bytes, name: `b${i}.png` })),
        {},
        {},
        ip,
      )
    expect((await batch(5)).status).toBe(201)
    expect((await batch(3)).status).toBe(201)
    expect((await batch(3)).status).toBe(429)
    const two = await batch(2)
    expect(two.status).toBe(201)
    expect(two.headers.get('ratelimit-remaining')).toBe('0')
  })

  test('the window resets: still 429 on its last millisecond, then a full window that starts at the next upload', async () => {
    const ip = newIp()
    const bytes = await png(18)
    await expectWindowResets(clock, {
      limit: 10,
      windowMs: 600_000,
      headers: true,
      // In batches of at most 5 files (the anonymous cap): the window counts files.
      async use(n) {
        const answers = []
        for (let left = n; left > 0; left -= 5)
          answers.push(
            await webUpload(
              Array.from({ length: Math.min(5, left) }, () => ({ bytes })),
              {},
              {},
              ip,
            ),
          )
        return answers
      },
    })
  })

  test('the per-IP key is the last X-Forwarded-For address (the one the proxy appended)', async () => {
    const ip = newIp()
    const bytes = await png(15)
    for (let i = 0; i < 10; i++)
      expect((await webUpload([{ bytes }], {}, {}, `198.51.100.${i}, ${ip}`)).status).toBe(201)
    expect((await webUpload([{ bytes }], {}, {}, `198.51.100.99, ${ip}`)).status).toBe(429)
  })
})

describe('logged-in web upload (JWT)', () => {
  test('counts in the same hourly window GET /api/v1/me reports', async () => {
    const user = await userWithKey(t)
    const bytes = await png(16)
    const res = await webUpload(
      [
        { bytes, name: 'a.png' },
        { bytes, name: 'b.png' },
      ],
      {},
      user.bearer,
    )
    expect(res.status).toBe(201)
    expect(res.headers.get('ratelimit-limit')).toBe('100')
    expect(res.headers.get('ratelimit-remaining')).toBe('98')
    for (const image of res.body.images) expect(image.deleteToken).toBeUndefined()

    const me = await t.json('/api/v1/me', { headers: user.keyHeader })
    expect(me.body.rateLimit).toMatchObject({ limit: 100, used: 2, remaining: 98 })
    expect(me.body.totalImages).toBe(2)

    // An API upload uses the same window.
    const api = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes }]),
    })
    expect(api.status).toBe(201)
    expect((await t.json('/api/v1/me', { headers: user.keyHeader })).body.rateLimit.used).toBe(3)

    // The web uploads are the account's own: listed with its images, deletable with its key.
    const list = await t.json('/api/v1/images', { headers: user.keyHeader })
    expect(list.body.total).toBe(3)
    const del = await t.json(`/api/v1/image/${res.body.images[0].id}`, { method: 'DELETE', headers: user.keyHeader })
    expect(del.status).toBe(200)
  })

  test('the anonymous IP window does not apply to a logged-in uploader', async () => {
    const user = await registerUser(t)
    const ip = newIp()
    const bytes = await png(17)
    for (let i = 0; i < 11; i++) expect((await webUpload([{ bytes }], {}, user.bearer, ip)).status).toBe(201)
  })

  test("the account's file limit (15), not the anonymous one: 15 files pass; 16 are 400, nothing stored or counted", async () => {
    const user = await registerUser(t)
    const tiny = await Promise.all(Array.from({ length: 16 }, (_, i) => makeImage('png', 8, 8, 300 + i)))
    const parts = tiny.map((bytes, i) => ({ bytes, name: `many${i}.png` }))
    const before = await storedFiles()
    const tooMany = await webUpload(parts, {}, user.bearer)
    expect(tooMany.status).toBe(400)
    expect(typeof tooMany.body.error).toBe('string')
    expect(await storedFiles()).toBe(before)
    expect((await t.json('/api/account/usage', { headers: user.bearer })).body).toMatchObject({
      totalImages: 0,
      rateLimit: { used: 0 },
    })

    const fifteen = await webUpload(parts.slice(0, 15), {}, user.bearer)
    expect(fifteen.status).toBe(201)
    expect(fifteen.body.images).toHaveLength(15)
    expect(await storedFiles()).toBe(before + 30) // an original and a thumbnail each
    expect((await t.json('/api/account/usage', { headers: user.bearer })).body).toMatchObject({
      totalImages: 15,
      rateLimit: { used: 15 },
    })
  })

  test('privateAccount makes every web upload private, whatever the request asks', async () => {
    const user = await registerUser(t)
    const before = await webUpload([{ bytes: await png(20) }], { visibility: 'public' }, user.bearer)
    expect(before.body.visibility).toBe('public')
    const patch = await t.json('/api/account', {
      method: 'PATCH',
      headers: { ...user.bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ privateAccount: true }),
    })
    expect(patch.status).toBe(200)
    expect(patch.body.user.privateAccount).toBe(true)
    for (const fields of [{}, { visibility: 'public' }] as Record<string, string>[]) {
      const res = await webUpload([{ bytes: await png(21) }], fields, user.bearer)
      expect(res.status).toBe(201)
      expect(res.body.visibility).toBe('private')
      expect((await t.json(`/api/v1/image/${res.body.id}`)).body.data.visibility).toBe('private')
      expect(ids(await t.json('/api/gallery?limit=40'))).not.toContain(res.body.id)
    }
    expect(ids(await t.json('/api/gallery?limit=40'))).toContain(before.body.id)
  })

  test('a folder name creates an album of the account, listed by GET /api/albums with the image in it', async () => {
    const user = await registerUser(t)
    const res = await webUpload([{ bytes: await png(18) }], { folder: 'Web folder' }, user.bearer)
    expect(res.status).toBe(201)
    const albums = await t.json('/api/albums', { headers: user.bearer })
    expect(albums.status).toBe(200)
    expect(albums.body.albums).toHaveLength(1)
    const [album] = albums.body.albums
    expect(album).toMatchObject({ title: 'Web folder', imageCount: 1, isPublic: true })
    const opened = await t.json(`/api/albums/${album.id}`, { headers: user.bearer })
    expect(opened.body.images.map((i: { id: string }) => i.id)).toEqual([res.body.id])
    // The same name again is the same album.
    const again = await webUpload([{ bytes: await png(22) }], { folder: 'Web folder' }, user.bearer)
    expect(again.status).toBe(201)
    const listed = (await t.json('/api/albums', { headers: user.bearer })).body.albums
    expect(listed.map((a: { id: string; imageCount: number }) => [a.id, a.imageCount])).toEqual([[album.id, 2]])
  })

  test('an invalid or malformed bearer token: 401, never treated as anonymous', async () => {
    const before = await storedFiles()
    for (const authorization of [
      'Bearer not-a-jwt',
      'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.AAAA',
      'Basic dXNlcjpwYXNz',
    ]) {
      const res = await webUpload([{ bytes: await png(19) }], {}, { authorization })
      expect(res.status).toBe(401)
      expect(typeof res.body.error).toBe('string')
    }
    expect(await storedFiles()).toBe(before)
  })
})

describe('anonymous file size limit', () => {
  // The real default (25 MB) is checked by the config tests; a small limit lets a small file pass it here.
  const LIMIT = 4096
  let small: TestServer

  beforeAll(async () => {
    small = await startTestServer({ ANON_MAX_FILE_SIZE: String(LIMIT) }, { classifier: fakeClassifier().classifier })
  })
  afterAll(() => small.stop())

  test('the default is 25 MB (binary)', () => {
    expect(loadConfig({}).limits.anonymous.maxFileSize).toBe(25 * 1024 * 1024)
  })

  test('a file over the anonymous limit: 413, nothing stored; a logged-in upload of it passes', async () => {
    // Random pixels do not compress, so this PNG is well over the limit.
    const side = 64
    const noise = new Uint8Array(side * side * 3).map(() => Math.floor(Math.random() * 256))
    const big = new Uint8Array(
      await sharp(noise, { raw: { width: side, height: side, channels: 3 } })
        .png()
        .toBuffer(),
    )
    expect(big.length).toBeGreaterThan(LIMIT)
    const before = await storedFiles(small)
    const res = await small.json('/api/upload', { method: 'POST', body: uploadForm([{ bytes: big }]) })
    expect(res.status).toBe(413)
    expect(typeof res.body.error).toBe('string')
    expect(await storedFiles(small)).toBe(before)

    const user = await registerUser(small)
    const logged = await small.json('/api/upload', {
      method: 'POST',
      headers: user.bearer,
      body: uploadForm([{ bytes: big }]),
    })
    expect(logged.status).toBe(201)
  })
})
