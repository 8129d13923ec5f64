import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import sharp from 'sharp'
import { blockSha256s, blocks, images, uploadWindows } from '../../src/db/schema'
import { originalKey, thumbnailKey } from '../../src/storage'
import { picture } from '../blocks/pictures'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { jsonBody, makeAdmin, registerUser, startTestServer, type TestServer, testClock, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'
import { expectWindowResets } from '../windows'

type Account = Awaited<ReturnType<typeof userWithKey>>

let t: TestServer
let admin: Account
const clock = testClock(Date.now())

beforeAll(async () => {
  t = await startTestServer(
    { TRUST_PROXY: 'true' },
    { classifier: fakeClassifier('neutral').classifier, rescan: { intervalMs: 3_600_000 }, now: clock.now },
  )
  admin = await userWithKey(t)
  await makeAdmin(t, admin.user.id)
})
afterAll(() => t.stop())

let seed = 1
const png = () => makeImage('png', 20, 16, seed++)

async function upload(user: Account, parts?: UploadPart[], fields: Record<string, string> = {}) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm(parts ?? [{ bytes: await png() }], fields),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** Every test reports from its own addresses, so the per-IP windows never interfere. */
let ipCounter = 1
const freshIp = () => `198.18.${Math.floor(ipCounter / 250)}.${ipCounter++ % 250}`

function report(body: unknown, ip = freshIp()) {
  return t.json('/api/reports', { method: 'POST', ...jsonBody(body, { 'x-forwarded-for': ip }) })
}
async function reported(imageId: string, reason = 'illegal', details?: string) {
  const res = await report({ imageId, reason, ...(details ? { details } : {}) })
  if (res.status !== 201) throw new Error(`report failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.report as { id: number; imageId: string; reason: string; createdAt: string }
}

const asAdmin = (path: string, init: RequestInit = {}) =>
  t.json(path, { ...init, headers: { ...(init.headers as Record<string, string>), ...admin.bearer } })
const action = (id: number, body: unknown) =>
  asAdmin(`/api/admin/reports/${id}/action`, { method: 'POST', ...jsonBody(body) })
const path = (link: string) => new URL(link).pathname

describe('POST /api/reports', () => {
  test('files a report without an account: 201 with the report and the window headers', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner)
    const res = await report({ imageId: up.id, reason: 'spam', details: 'posted in every thread' })
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    expect(Object.keys(res.body.report).sort()).toEqual(['createdAt', 'id', 'imageId', 'reason'])
    expect(res.body.report).toMatchObject({ imageId: up.id, reason: 'spam' })
    expect(Number.isInteger(res.body.report.id)).toBe(true)
    expect(res.body.report.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(res.headers.get('ratelimit-limit')).toBe('5')
    expect(res.headers.get('ratelimit-remaining')).toBe('4')
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(3500)
  })

  test('every reason of the enum is accepted; private images can be reported too', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner, undefined, { visibility: 'private' })
    for (const reason of ['illegal', 'nsfw', 'copyright', 'spam', 'other'])
      expect((await report({ imageId: up.id, reason })).status).toBe(201)
  })

  test('unknown, malformed, deleted or expired image: 404; bad reason or details: 400; nothing counted', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner)
    const expired = await upload(owner)
    await t.server.db
      .update(images)
      .set({ expiresAt: new Date(clock.now() - 1000) })
      .where(eq(images.id, expired.id))
    const deleted = await upload(owner)
    await t.json(`/api/v1/image/${deleted.id}`, { method: 'DELETE', headers: owner.keyHeader })

    const ip = freshIp()
    for (const imageId of ['AAAAAAAA', 'nope', '../../etc', expired.id, deleted.id]) {
      const res = await report({ imageId, reason: 'spam' }, ip)
      expect([imageId, res.status]).toEqual([imageId, 404])
      expect(typeof res.body.error).toBe('string')
    }
    for (const body of [
      { imageId: up.id, reason: 'boring' },
      { imageId: up.id },
      { reason: 'spam' },
      { imageId: up.id, reason: 'spam', details: 'x'.repeat(1001) },
      { imageId: up.id, reason: 'spam', details: 42 },
    ]) {
      const res = await report(body, ip)
      expect([body, res.status]).toEqual([body, 400])
      expect(typeof res.body.error).toBe('string')
    }
    expect(
      (await report({ imageId: up.id, reason: 'other', details: 'x'.repeat(1000) }, ip)).headers.get(
        'ratelimit-remaining',
      ),
    ).toBe('4')
  })

  test('rate limit: 5 per hour per IP, then 429 with Retry-After and RateLimit-* headers; other IPs unaffected', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner)
    const ip = freshIp()
    for (let i = 0; i < 5; i++) expect((await report({ imageId: up.id, reason: 'spam' }, ip)).status).toBe(201)
    const limited = await report({ imageId: up.id, reason: 'spam' }, ip)
    expect(limited.status).toBe(429)
    expect(typeof limited.body.error).toBe('string')
    expect(limited.headers.get('ratelimit-limit')).toBe('5')
    expect(limited.headers.get('ratelimit-remaining')).toBe('0')
    const retryAfter = Number(limited.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(3500)
    expect(retryAfter).toBeLessThanOrEqual(3600)
    expect(Number(limited.headers.get('ratelimit-reset'))).toBe(retryAfter)
    // Unknown images are refused with 429 too once the window is used up (the check comes first).
    expect((await report({ imageId: 'AAAAAAAA', reason: 'spam' }, ip)).status).toBe(429)
    expect((await report({ imageId: up.id, reason: 'spam' })).status).toBe(201)
    // The window is persisted with the upload windows, under its own key.
    const [row] = await t.server.db
      .select()
      .from(uploadWindows)
      .where(eq(uploadWindows.key, `report:${ip}`))
    expect(row?.used).toBe(5)
  })

  test('the window resets: 429 on its last millisecond, then a full hour from the next report', async () => {
    const up = await upload(await userWithKey(t))
    const ip = freshIp()
    await expectWindowResets(clock, {
      limit: 5,
      windowMs: 3_600_000,
      headers: true,
      async use(n) {
        const answers = []
        for (let i = 0; i < n; i++) answers.push(await report({ imageId: up.id, reason: 'spam' }, ip))
        return answers
      },
    })
  })
})

describe('admin endpoints', () => {
  test('others get 403, no token 401', async () => {
    const someone = await registerUser(t)
    const owner = await userWithKey(t)
    const r = await reported((await upload(owner)).id)
    for (const [method, url, body] of [
      ['GET', '/api/admin/reports', undefined],
      ['POST', `/api/admin/reports/${r.id}/dismiss`, undefined],
      ['POST', `/api/admin/reports/${r.id}/action`, { deleteImage: true }],
    ] as const) {
      const init = { method, ...(body ? jsonBody(body) : {}) }
      const forbidden = await t.json(url, {
        ...init,
        headers: { ...(init as { headers?: Record<string, string> }).headers, ...someone.bearer },
      })
      expect([url, forbidden.status]).toEqual([url, 403])
      expect((await t.json(url, init)).status).toBe(401)
      // An admin's API key is not a session either.
      expect(
        (
          await t.json(url, {
            ...init,
            headers: { ...(init as { headers?: Record<string, string> }).headers, ...admin.keyHeader },
          })
        ).status,
      ).toBe(401)
    }
    const stillOpen = (await asAdmin('/api/admin/reports?limit=100')).body.reports.find(
      (x: { id: number }) => x.id === r.id,
    )
    expect(stillOpen.status).toBe('open')
  })

  test('lists open reports newest first, with the image, its owner and the count of open reports about it', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner, [{ bytes: await png(), name: 'listed.png' }])
    const first = await reported(up.id, 'copyright', 'my photo')
    const second = await reported(up.id, 'spam')
    const res = await asAdmin('/api/admin/reports?limit=100')
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ success: true, page: 1, limit: 100 })
    expect(res.body.pages).toBe(Math.ceil(res.body.total / 100))
    const ids = res.body.reports.map((x: { id: number }) => x.id)
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id))
    const item = res.body.reports.find((x: { id: number }) => x.id === first.id)
    expect(item).toMatchObject({
      id: first.id,
      imageId: up.id,
      reason: 'copyright',
      details: 'my photo',
      status: 'open',
      resolvedAt: null,
      openReports: 2,
      owner: { id: owner.user.id, username: owner.user.username, banned: false },
    })
    expect(item.image).toMatchObject({
      id: up.id,
      url: up.url,
      thumbnail: up.thumbnail,
      viewer: up.viewer,
      filename: 'listed.png',
      visibility: 'public',
      nsfw: false,
    })
    expect(res.body.reports.every((x: { status: string }) => x.status === 'open')).toBe(true)
  })

  test('status filter, pagination, and bad values', async () => {
    expect((await asAdmin('/api/admin/reports?status=closed')).status).toBe(400)
    expect((await asAdmin('/api/admin/reports?page=0')).status).toBe(400)
    const page = await asAdmin('/api/admin/reports?limit=1&page=2')
    expect(page.status).toBe(200)
    expect(page.body.reports).toHaveLength(1)
    expect(page.body.pages).toBe(page.body.total)
    for (const status of ['dismissed', 'actioned']) {
      const res = await asAdmin(`/api/admin/reports?status=${status}&limit=100`)
      expect(res.status).toBe(200)
      expect(res.body.reports.every((x: { status: string }) => x.status === status)).toBe(true)
    }
  })

  test('dismiss: the report closes, the image stays', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner)
    const r = await reported(up.id, 'other')
    const res = await asAdmin(`/api/admin/reports/${r.id}/dismiss`, { method: 'POST' })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.report).toMatchObject({ id: r.id, status: 'dismissed', openReports: 0 })
    expect(Date.parse(res.body.report.resolvedAt)).toBeGreaterThan(Date.now() - 10_000)
    expect((await t.fetch(path(up.url))).status).toBe(200)
    const open = (await asAdmin('/api/admin/reports?limit=100')).body.reports.map((x: { id: number }) => x.id)
    expect(open).not.toContain(r.id)
    const dismissed = (await asAdmin('/api/admin/reports?status=dismissed&limit=100')).body.reports.map(
      (x: { id: number }) => x.id,
    )
    expect(dismissed).toContain(r.id)
    expect((await asAdmin(`/api/admin/reports/${r.id}/dismiss`, { method: 'POST' })).status).toBe(409)
    expect((await asAdmin('/api/admin/reports/999999/dismiss', { method: 'POST' })).status).toBe(404)
    expect((await asAdmin('/api/admin/reports/abc/dismiss', { method: 'POST' })).status).toBe(400)
  })

  test('action: deletes the image with its files, bans the owner, and closes every open report of the image', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner)
    const other = await upload(owner)
    const a = await reported(up.id, 'illegal')
    const b = await reported(up.id, 'nsfw')
    const elsewhere = await reported(other.id, 'spam')
    expect(await t.server.deps.storage.exists(originalKey(up.id, 'png'))).toBe(true)

    const res = await action(b.id, { deleteImage: true, banOwner: true })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ success: true, imageDeleted: true, ownerBanned: true, reportsActioned: 2 })
    expect(res.body.report).toMatchObject({
      id: b.id,
      status: 'actioned',
      image: null,
      openReports: 0,
      owner: { id: owner.user.id, banned: true },
    })

    // Gone everywhere, files included.
    expect((await t.json(`/api/v1/image/${up.id}`)).status).toBe(404)
    expect((await t.fetch(path(up.url))).status).toBe(404)
    expect(await t.server.deps.storage.exists(originalKey(up.id, 'png'))).toBe(false)
    expect(await t.server.deps.storage.exists(thumbnailKey(up.id))).toBe(false)
    // The owner is banned: their key and token are refused, their other images leave public feeds.
    expect((await t.json('/api/v1/me', { headers: owner.keyHeader })).status).toBe(403)
    expect((await t.json('/api/auth/me', { headers: owner.bearer })).status).toBe(403)
    expect((await t.json(`/api/users/${owner.user.username}`)).status).toBe(404)

    const actioned = (await asAdmin('/api/admin/reports?status=actioned&limit=100')).body.reports.map(
      (x: { id: number }) => x.id,
    )
    expect(actioned).toEqual(expect.arrayContaining([a.id, b.id]))
    // Reports about other images stay open.
    const open = (await asAdmin('/api/admin/reports?limit=100')).body.reports.map((x: { id: number }) => x.id)
    expect(open).toContain(elsewhere.id)
    expect((await action(a.id, { deleteImage: true })).status).toBe(409)
    expect((await asAdmin(`/api/admin/reports/${a.id}/dismiss`, { method: 'POST' })).status).toBe(409)
  })

  test('action without banOwner leaves the owner alone; a dismissed report can still be actioned', async () => {
    const owner = await userWithKey(t)
    const up = await upload(owner)
    const r = await reported(up.id)
    await asAdmin(`/api/admin/reports/${r.id}/dismiss`, { method: 'POST' })
    const res = await action(r.id, { deleteImage: true })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ imageDeleted: true, ownerBanned: false, reportsActioned: 1 })
    expect((await t.json('/api/v1/me', { headers: owner.keyHeader })).status).toBe(200)
    expect((await t.json(`/api/v1/image/${up.id}`)).status).toBe(404)
  })

  test('an action still blocks and bans when the owner deleted the image first', async () => {
    const owner = await userWithKey(t)
    const bytes = await png()
    const up = await upload(owner, [{ bytes }])
    const r = await reported(up.id)
    await t.json(`/api/v1/image/${up.id}`, { method: 'DELETE', headers: owner.keyHeader })
    const res = await action(r.id, { deleteImage: true, banOwner: true })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ imageDeleted: false, ownerBanned: true, reportsActioned: 1 })
    const other = await userWithKey(t)
    expect(
      (await t.json('/api/v1/upload', { method: 'POST', headers: other.keyHeader, body: uploadForm([{ bytes }]) }))
        .status,
    ).toBe(400)
  })

  test('the body must ask for the deletion; an admin cannot ban themselves', async () => {
    const owner = await userWithKey(t)
    const r = await reported((await upload(owner)).id)
    for (const body of [{}, { deleteImage: false }, { deleteImage: 'yes' }, { deleteImage: true, banOwner: 'no' }]) {
      expect([body, (await action(r.id, body)).status]).toEqual([body, 400])
    }
    expect((await action(999999, { deleteImage: true })).status).toBe(404)
    const own = await reported((await upload(admin)).id)
    expect((await action(own.id, { deleteImage: true, banOwner: true })).status).toBe(400)
    expect((await action(own.id, { deleteImage: true })).status).toBe(200)
  })
})

describe('removed bytes cannot come back', () => {
  test('re-uploading the removed bytes is refused on both upload endpoints, alone or in a batch, and nothing is stored', async () => {
    const owner = await userWithKey(t)
    const bytes = await png()
    const up = await upload(owner, [{ bytes }])
    await action((await reported(up.id)).id, { deleteImage: true })
    expect(
      (
        await t.server.db
          .select()
          .from(blockSha256s)
          .innerJoin(blocks, eq(blocks.id, blockSha256s.blockId))
          .where(eq(blocks.imageId, up.id))
      ).length,
    ).toBeGreaterThanOrEqual(1)

    const someone = await userWithKey(t)
    const usage = (await t.json('/api/v1/me', { headers: someone.keyHeader })).body
    const api = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: someone.keyHeader,
      body: uploadForm([{ bytes, name: 'again.png' }]),
    })
    expect(api.status).toBe(400)
    expect(api.body.error).toMatch(/^This image was removed/)
    const batch = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: someone.keyHeader,
      body: uploadForm([{ bytes: await png() }, { bytes }]),
    })
    expect(batch.status).toBe(400)
    const after = (await t.json('/api/v1/me', { headers: someone.keyHeader })).body
    expect(after.totalImages).toBe(usage.totalImages)
    expect(after.rateLimit.used).toBe(usage.rateLimit.used)

    const anon = await t.json('/api/upload', {
      method: 'POST',
      headers: { 'x-forwarded-for': freshIp() },
      body: uploadForm([{ bytes }]),
    })
    expect(anon.status).toBe(400)
    expect(anon.body.error).toMatch(/^This image was removed/)
    const web = await t.json('/api/upload', { method: 'POST', headers: someone.bearer, body: uploadForm([{ bytes }]) })
    expect(web.status).toBe(400)

    // Another picture is fine (the fixture's other seeds are the same stripes shifted: perceptually the same picture).
    expect(
      (
        await t.json('/api/v1/upload', {
          method: 'POST',
          headers: someone.keyHeader,
          body: uploadForm([{ bytes: await picture(1) }]),
        })
      ).status,
    ).toBe(201)
  })

  test('both the bytes as uploaded and as served (after location stripping) are blocked', async () => {
    const owner = await userWithKey(t)
    const pixels = Buffer.from(crypto.getRandomValues(new Uint8Array(32 * 24 * 3)))
    const original = new Uint8Array(
      await sharp(pixels, { raw: { width: 32, height: 24, channels: 3 } })
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 26/1' } })
        .toBuffer(),
    )
    const up = await upload(owner, [{ bytes: original, name: 'gps.jpg' }])
    const servedBytes = new Uint8Array(await (await t.fetch(path(up.url))).arrayBuffer())
    expect(Buffer.from(servedBytes).equals(Buffer.from(original))).toBe(false)

    await action((await reported(up.id)).id, { deleteImage: true })
    const someone = await userWithKey(t)
    for (const bytes of [original, servedBytes]) {
      const res = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: someone.keyHeader,
        body: uploadForm([{ bytes, name: 'x.jpg' }]),
      })
      expect(res.status).toBe(400)
    }
  })
})

describe('/swagger/json', () => {
  test('documents the report endpoints', async () => {
    const doc = (await t.json('/swagger/json')).body
    expect(doc.paths['/api/reports'].post).toBeDefined()
    expect(doc.paths['/api/admin/reports'].get).toBeDefined()
    expect(doc.paths['/api/admin/reports/{id}/dismiss'].post).toBeDefined()
    expect(doc.paths['/api/admin/reports/{id}/action'].post).toBeDefined()
    expect(JSON.stringify(doc.paths['/api/reports'].post.requestBody)).toContain('copyright')
  })
})
