import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { SQL } from 'bun'
import { eq } from 'drizzle-orm'
import { engine } from '../../src/db/engine'
import { images } from '../../src/db/schema'
import { ImageDetailsResponse } from '../../src/modules/images/model'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import {
  eventually,
  jsonBody,
  makeAdmin,
  registerUser,
  startTestServer,
  type TestServer,
  testClock,
  userWithKey,
} from '../helpers'
import { writeBehindCaches } from '../other-connection'

let t: TestServer
let alice: Awaited<ReturnType<typeof userWithKey>>
let bob: Awaited<ReturnType<typeof userWithKey>>
// Expiry is decided by this clock: a test stops it at an image's expiry instead of sleeping past it.
const clock = testClock()

beforeAll(async () => {
  t = await startTestServer({}, { now: clock.now })
  alice = await userWithKey(t)
  bob = await userWithKey(t)
})
afterAll(() => t.stop())
afterEach(() => clock.reset())

async function upload(
  who: { keyHeader: Record<string, string> },
  parts?: UploadPart[],
  fields: Record<string, string> = {},
) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: who.keyHeader,
    body: uploadForm(parts ?? [{ bytes: await makeImage('png') }], fields),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

describe('GET /api/v1/image/:id', () => {
  test('answers the contract shape without credentials, private images included', async () => {
    const up = await upload(alice, undefined, { visibility: 'private' })
    const res = await t.json(`/api/v1/image/${up.id}`)
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(Object.keys(res.body.data).sort()).toEqual(
      [
        'id',
        'url',
        'thumbnail',
        'viewer',
        'width',
        'height',
        'size',
        'mime',
        'views',
        'visibility',
        'nsfw',
        'uploadedAt',
        'expiresAt',
      ].sort(),
    )
    expect(res.body.data).toMatchObject({
      id: up.id,
      url: up.url,
      visibility: 'private',
      nsfw: false,
      views: 0,
      size: up.size,
    })
    expect(res.body.data.uploadedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    // Answered ahead of the app (src/http/fast-route.ts), so the framework does not check it against its schema: this does.
    expect(Value.Errors(ImageDetailsResponse, res.body).First()).toBeUndefined()
  })
  test('answered from memory (live-cache.ts), and every change through the service shows at once', async () => {
    const up = await upload(alice, undefined, { expires: '60' })
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.nsfw).toBe(false)
    expect(t.server.services.images.liveCache.has(up.id)).toBe(true)
    // A write through another connection is the one change the cache is not told of: the answer comes from memory.
    await writeBehindCaches(t, 'UPDATE images SET width = 1 WHERE id = $1', [up.id])
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.width).toBe(up.width)
    // Changes through the service: a PATCH, views, the expiry.
    expect(
      (await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }, alice.keyHeader) }))
        .status,
    ).toBe(200)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data).toMatchObject({ nsfw: true, width: 1 })
    await t.fetch(new URL(up.url).pathname)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(1)
    await t.server.services.images.flushViews()
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(1)
    clock.set(Date.parse(up.expiresAt))
    expect((await t.json(`/api/v1/image/${up.id}`)).status).toBe(404)
  })
  test('HEAD: the status and headers of GET, no body', async () => {
    const up = await upload(alice)
    const get = await t.fetch(`/api/v1/image/${up.id}`)
    const head = await t.fetch(`/api/v1/image/${up.id}`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'))
    expect(head.headers.get('content-length')).toBe(String((await get.arrayBuffer()).byteLength))
    expect((await head.arrayBuffer()).byteLength).toBe(0)
    expect((await t.fetch('/api/v1/image/AAAAAAAA', { method: 'HEAD' })).status).toBe(404)
  })
  test('unknown and malformed ids: 404', async () => {
    for (const id of ['AAAAAAAA', 'short', '..%2F..%2Fetc', 'abcdefgh1']) {
      const res = await t.json(`/api/v1/image/${id}`)
      expect(res.status).toBe(404)
      expect(typeof res.body.error).toBe('string')
    }
  })
})

describe('PATCH /api/v1/image/:id', () => {
  test('changes visibility and nsfw; omitted fields stay', async () => {
    const up = await upload(alice)
    let res = await t.json(`/api/v1/image/${up.id}`, {
      method: 'PATCH',
      ...jsonBody({ visibility: 'private' }, alice.keyHeader),
    })
    expect(res.status).toBe(200)
    const filename = up.filename
    expect(res.body).toEqual({
      success: true,
      id: up.id,
      visibility: 'private',
      nsfw: false,
      expiresAt: null,
      filename,
    })
    res = await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }, alice.keyHeader) })
    expect(res.body).toEqual({ success: true, id: up.id, visibility: 'private', nsfw: true, expiresAt: null, filename })
  })
  test('renames: the new name (spaces trimmed) shows in the list, the viewer page and the search', async () => {
    const up = await upload(alice, [{ bytes: await makeImage('png'), name: 'IMG_0001.png' }])
    const res = await t.json(`/api/v1/image/${up.id}`, {
      method: 'PATCH',
      ...jsonBody({ filename: '  Lake <at> "dawn".png ' }, alice.keyHeader),
    })
    expect(res.status).toBe(200)
    expect(res.body.filename).toBe('Lake <at> "dawn".png')
    const listed = await t.json('/api/v1/images?q=dawn', { headers: alice.keyHeader })
    expect(listed.body.images.map((i: any) => [i.id, i.filename])).toEqual([[up.id, 'Lake <at> "dawn".png']])
    const page = await (await t.fetch(`/i/${up.id}`)).text()
    expect(page).toContain('Lake &lt;at&gt; &quot;dawn&quot;.png')
    expect(page).not.toContain('IMG_0001')
    expect((await t.json('/api/search?q=dawn')).body.images.map((i: any) => i.id)).toEqual([up.id])
  })
  test('a rename to nothing or past the upload bound (255): 400, the name stays', async () => {
    const up = await upload(alice, [{ bytes: await makeImage('png'), name: 'keep.png' }])
    for (const filename of ['', '   ', 'x'.repeat(256)]) {
      const res = await t.json(`/api/v1/image/${up.id}`, {
        method: 'PATCH',
        ...jsonBody({ filename, nsfw: true }, alice.keyHeader),
      })
      expect(res.status).toBe(400)
      expect(res.body.error).toBe('filename must be 1 to 255 characters')
    }
    const ok = await t.json(`/api/v1/image/${up.id}`, {
      method: 'PATCH',
      ...jsonBody({ filename: 'y'.repeat(255) }, alice.keyHeader),
    })
    expect(ok.body.filename).toBe('y'.repeat(255))
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.nsfw).toBe(false)
  })
  test('no fields or an invalid visibility: 400, nothing changes', async () => {
    const up = await upload(alice)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({}, alice.keyHeader) })).status).toBe(
      400,
    )
    const bad = await t.json(`/api/v1/image/${up.id}`, {
      method: 'PATCH',
      ...jsonBody({ visibility: 'hidden', nsfw: true }, alice.keyHeader),
    })
    expect(bad.status).toBe(400)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data).toMatchObject({ visibility: 'public', nsfw: false })
  })
  test("another user's image: 404; no key: 401", async () => {
    const up = await upload(alice)
    expect(
      (await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }, bob.keyHeader) })).status,
    ).toBe(404)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }) })).status).toBe(401)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.nsfw).toBe(false)
  })

  // A PATCH reads the image, then updates it: a delete committed in between (another request, the expiry sweep) left
  // the update without a row, answered 500. PostgreSQL makes the moment exact: the PATCH has read the row and waits on
  // the lock of a delete that commits only then.
  test.skipIf(engine !== 'pg')('an image deleted while a PATCH waits for it: 404, not a 500', async () => {
    const up = await upload(alice)
    const other = new SQL(t.env.DATABASE_URL!)
    try {
      let commit!: () => void
      let deleted!: () => void
      const deleting = other.begin(async (tx) => {
        await tx.unsafe('DELETE FROM images WHERE id = $1', [up.id])
        deleted()
        await new Promise<void>((resolve) => (commit = resolve))
      })
      await new Promise<void>((resolve) => (deleted = resolve))
      const patching = t.json(`/api/v1/image/${up.id}`, {
        method: 'PATCH',
        ...jsonBody({ nsfw: true }, alice.keyHeader),
      })
      await eventually(
        async () =>
          (await other`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)
            .length > 0,
        5000,
        'the PATCH waiting on the row',
      )
      commit()
      await deleting
      const res = await patching
      expect(res.status).toBe(404)
      expect(res.body.error).toBe('Image not found')
    } finally {
      await other.close()
    }
  })
})

describe('DELETE /api/v1/image/:id', () => {
  test("another user's image: 404 and it stays", async () => {
    const up = await upload(alice)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: bob.keyHeader })).status).toBe(404)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE' })).status).toBe(401)
    expect((await t.fetch(new URL(up.url).pathname)).status).toBe(200)
  })
  test('the owner deletes: files gone at once, 404 everywhere', async () => {
    const up = await upload(alice)
    const res = await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: alice.keyHeader })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expect((await t.fetch(new URL(up.url).pathname)).status).toBe(404)
    expect((await t.fetch(new URL(up.thumbnail).pathname)).status).toBe(404)
    expect((await t.json(`/api/v1/image/${up.id}`)).status).toBe(404)
    expect(await t.server.deps.storage.exists(`originals/${up.id}.png`)).toBe(false)
    expect((await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: alice.keyHeader })).status).toBe(404)
  })
})

describe('GET /api/v1/images', () => {
  test("lists only the caller's images, newest first, with the contract fields", async () => {
    const carol = await userWithKey(t)
    const first = await upload(carol, [{ bytes: await makeImage('png'), name: 'first.png' }])
    const second = await upload(carol, [{ bytes: await makeImage('png'), name: 'second.png' }], {
      visibility: 'private',
      nsfw: 'true',
    })
    await upload(alice)
    const res = await t.json('/api/v1/images', { headers: carol.keyHeader })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ success: true, total: 2, page: 1, limit: 20, pages: 1 })
    expect(res.body.images.map((i: any) => i.id)).toEqual([second.id, first.id])
    expect(res.body.images[0]).toMatchObject({ filename: 'second.png', visibility: 'private', nsfw: true, views: 0 })
    expect(Object.keys(res.body.images[0])).toEqual(
      expect.arrayContaining([
        'id',
        'url',
        'thumbnail',
        'viewer',
        'filename',
        'size',
        'width',
        'height',
        'mime',
        'views',
        'visibility',
        'created_at',
      ]),
    )
  })
  test('pagination: limit, pages, clamping to 100, 400 for bad values', async () => {
    const dave = await userWithKey(t)
    await upload(dave, [
      { bytes: await makeImage('png') },
      { bytes: await makeImage('png') },
      { bytes: await makeImage('png') },
    ])
    const page2 = await t.json('/api/v1/images?page=2&limit=2', { headers: dave.keyHeader })
    expect(page2.body).toMatchObject({ total: 3, page: 2, limit: 2, pages: 2 })
    expect(page2.body.images).toHaveLength(1)
    expect((await t.json('/api/v1/images?limit=500', { headers: dave.keyHeader })).body.limit).toBe(100)
    expect((await t.json('/api/v1/images?limit=50', { headers: dave.keyHeader })).body.limit).toBe(50)
    for (const q of ['page=0', 'page=-1', 'limit=0', 'limit=abc', 'page=1.5']) {
      const res = await t.json(`/api/v1/images?${q}`, { headers: dave.keyHeader })
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
    }
    const empty = await userWithKey(t)
    expect((await t.json('/api/v1/images', { headers: empty.keyHeader })).body).toMatchObject({
      total: 0,
      pages: 0,
      images: [],
    })
  })
})

describe('GET /api/v1/images: search and order', () => {
  test('q matches a part of the filename, case-insensitively; wildcards are literal', async () => {
    const erin = await userWithKey(t)
    const names = ['Holiday_beach.png', 'holidayXbeach.png', 'work 100%.png', 'notes.png']
    const ids: Record<string, string> = {}
    for (const name of names) ids[name] = (await upload(erin, [{ bytes: await makeImage('png'), name }])).id
    const found = async (q: string) =>
      (await t.json(`/api/v1/images?q=${encodeURIComponent(q)}`, { headers: erin.keyHeader })).body
    expect((await found('HOLIDAY')).images.map((i: any) => i.filename).sort()).toEqual([
      'Holiday_beach.png',
      'holidayXbeach.png',
    ])
    expect(await found('y_b')).toMatchObject({ total: 1, images: [{ id: ids['Holiday_beach.png'] }] })
    expect(await found('0%')).toMatchObject({ total: 1, images: [{ id: ids['work 100%.png'] }] })
    expect((await found('nothing like it')).total).toBe(0)
    // Another account's images never match.
    expect((await t.json('/api/v1/images?q=holiday', { headers: alice.keyHeader })).body.total).toBe(0)
    const long = await t.json(`/api/v1/images?q=${'a'.repeat(256)}`, { headers: erin.keyHeader })
    expect(long.status).toBe(400)
    expect(long.body.error).toBe('q must be at most 255 characters')
  })
  test('sort by date, size or views, either way; a bad value is a 400', async () => {
    const frank = await userWithKey(t)
    const small = await upload(frank, [{ bytes: await makeImage('png', 8, 8, 1), name: 'small.png' }])
    const large = await upload(frank, [{ bytes: await makeImage('png', 300, 300, 2), name: 'large.png' }])
    const mid = await upload(frank, [{ bytes: await makeImage('png', 60, 60, 3), name: 'mid.png' }])
    expect(small.size < mid.size && mid.size < large.size).toBe(true)
    for (let i = 0; i < 3; i++) await t.fetch(new URL(small.url).pathname)
    await t.fetch(new URL(large.url).pathname)
    await t.server.services.images.flushViews()
    const order = async (query: string) =>
      (await t.json(`/api/v1/images?${query}`, { headers: frank.keyHeader })).body.images.map((i: any) => i.filename)
    expect(await order('')).toEqual(['mid.png', 'large.png', 'small.png'])
    expect(await order('sort=date&order=asc')).toEqual(['small.png', 'large.png', 'mid.png'])
    expect(await order('sort=size')).toEqual(['large.png', 'mid.png', 'small.png'])
    expect(await order('sort=size&order=asc')).toEqual(['small.png', 'mid.png', 'large.png'])
    expect(await order('sort=views')).toEqual(['small.png', 'large.png', 'mid.png'])
    expect(await order('sort=views&order=asc&limit=2')).toEqual(['mid.png', 'large.png'])
    for (const query of ['sort=name', 'order=up', 'sort=']) {
      const res = await t.json(`/api/v1/images?${query}`, { headers: frank.keyHeader })
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
    }
  })
})

describe('GET /api/v1/me', () => {
  test('reports every Account field with real usage', async () => {
    const erin = await userWithKey(t)
    const up = await upload(erin, [{ bytes: await makeImage('png') }, { bytes: await makeImage('jpeg') }])
    const res = await t.json('/api/v1/me', { headers: erin.keyHeader })
    expect(res.status).toBe(200)
    const used = up.images.reduce((s: number, i: any) => s + i.size, 0)
    expect(res.body).toMatchObject({
      success: true,
      username: erin.user.username,
      email: erin.user.email,
      role: 'user',
      emailVerified: false,
      totalImages: 2,
      storage: { used, limit: 500 * 1024 * 1024, remaining: 500 * 1024 * 1024 - used },
      limits: { maxFileSize: 50 * 1024 * 1024, maxFilesPerUpload: 15 },
      rateLimit: { window: '1 hour', limit: 100, used: 2, remaining: 98 },
    })
    expect(res.body.rateLimit.resetSeconds).toBeGreaterThan(3500)
    expect(res.body.rateLimit.resetSeconds).toBeLessThanOrEqual(3600)
  })
  test('verified accounts get the verified storage; admins get nulls and 100 files', async () => {
    const frank = await userWithKey(t)
    await t.server.services.admin.updateUser(frank.user.id, { emailVerified: true })
    expect((await t.json('/api/v1/me', { headers: frank.keyHeader })).body.storage.limit).toBe(10 * 1024 * 1024 * 1024)
    await makeAdmin(t, frank.user.id)
    const res = await t.json('/api/v1/me', { headers: frank.keyHeader })
    expect(res.body.role).toBe('admin')
    expect(res.body.storage).toEqual({ used: 0, limit: null, remaining: null })
    expect(res.body.limits).toEqual({ maxFileSize: null, maxFilesPerUpload: 100 })
  })
  test('without a key: 401; a JWT is not an API key', async () => {
    expect((await t.json('/api/v1/me')).status).toBe(401)
    const account = await registerUser(t)
    expect((await t.json('/api/v1/me', { headers: account.bearer })).status).toBe(401)
  })
})

describe('views', () => {
  test('direct links count, thumbnails and API reads do not', async () => {
    const up = await upload(alice)
    await t.fetch(new URL(up.url).pathname)
    await t.fetch(new URL(up.url).pathname)
    await t.fetch(new URL(up.thumbnail).pathname)
    await t.fetch(new URL(up.url).pathname, { method: 'HEAD' })
    await t.json(`/api/v1/image/${up.id}`)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(2)
    // Buffered views reach the database in a flush, and are not lost by it.
    await t.server.services.images.flushViews()
    const [row] = await t.server.db.select({ views: images.views }).from(images).where(eq(images.id, up.id))
    expect(row.views).toBe(2)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(2)
  })
  test('unfurlers and crawlers (CRAWLER_AGENTS) do not count, on the direct link or the viewer page; browsers do', async () => {
    const up = await upload(alice)
    const agents = [
      'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)',
      'Twitterbot/1.0',
      'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
      'TelegramBot (like TwitterBot)',
      'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
      'WhatsApp/2.23.20.0',
      'LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)',
      'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
      'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
    ]
    for (const agent of agents) {
      for (const path of [new URL(up.url).pathname, `/i/${up.id}`]) {
        const res = await t.fetch(path, { headers: { 'user-agent': agent } })
        expect({ agent, path, status: res.status }).toEqual({ agent, path, status: 200 })
        await res.arrayBuffer()
      }
    }
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(0)
    const browser = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36'
    await (await t.fetch(new URL(up.url).pathname, { headers: { 'user-agent': browser } })).arrayBuffer()
    await (await t.fetch(`/i/${up.id}`, { headers: { 'user-agent': browser } })).arrayBuffer()
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(2)
  })
  test('a flush keeps the image in memory with the written count; the next views add to it', async () => {
    const up = await upload(alice)
    await t.fetch(new URL(up.url).pathname)
    const cache = t.server.services.images.liveCache
    expect(cache.has(up.id)).toBe(true)
    await t.server.services.images.flushViews()
    expect(cache.has(up.id)).toBe(true)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(1)
    await t.fetch(new URL(up.url).pathname)
    await t.server.services.images.flushViews()
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.views).toBe(2)
    const [row] = await t.server.db.select({ views: images.views }).from(images).where(eq(images.id, up.id))
    expect(row.views).toBe(2)
    // Any other change to the row still drops it.
    expect(
      (await t.json(`/api/v1/image/${up.id}`, { method: 'PATCH', ...jsonBody({ nsfw: true }, alice.keyHeader) }))
        .status,
    ).toBe(200)
    // At once on SQLite (the update hook); on PostgreSQL with the change notice, a moment after the commit.
    await eventually(() => !cache.has(up.id), 5000, 'the entry dropped')
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data).toMatchObject({ views: 2, nsfw: true })
  })
})
