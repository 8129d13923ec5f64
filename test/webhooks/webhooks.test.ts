import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { type Image, webhooks as webhooksTable } from '../../src/db/schema'
import { deliveryBody, isDiscordUrl } from '../../src/modules/webhooks/payload'
import { isPrivateAddress } from '../../src/net/address'
import { makeImage, uploadForm } from '../fixtures'
import { eventually, jsonBody, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'

interface Hit {
  path: string
  headers: Record<string, string>
  body: string
  at: number
}

/** A local HTTP receiver (127.0.0.1) that records every request; `answer` decides the response. */
function receiver(answer: (hit: Hit, n: number) => Response | Promise<Response> = () => new Response('ok')) {
  const hits: Hit[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const hit = {
        path: new URL(request.url).pathname,
        headers: Object.fromEntries(request.headers),
        body: await request.text(),
        at: Date.now(),
      }
      hits.push(hit)
      return answer(hit, hits.length)
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    hits,
    async waitFor(n: number) {
      await eventually(() => hits.length >= n, undefined, `${n} deliveries`)
      return hits
    },
    stop: () => server.stop(true),
  }
}

const verify = (secret: string, hit: Hit) =>
  hit.headers['x-webhook-signature'] === `sha256=${createHmac('sha256', secret).update(hit.body).digest('hex')}`

async function addWebhook(t: TestServer, bearer: Record<string, string>, body: Record<string, unknown>) {
  return t.json('/api/webhooks', { method: 'POST', ...jsonBody(body, bearer) })
}

async function upload(t: TestServer, keyHeader: Record<string, string>, name = 'a.png') {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 16, 16), name }]),
  })
  expect(res.status).toBe(201)
  return res.body
}

/**
 * Waits until the server has no delivery queued, in flight or waiting for a retry: after the event's first delivery
 * was seen, every delivery it will ever make has been made (so "no other delivery" is a fact, not a short sleep).
 */
const settled = (t: TestServer) =>
  eventually(() => t.server.services.webhooks.pending() === 0, undefined, 'the deliveries to settle')

const RETRIES = [100, 200, 300]

describe('webhooks (WEBHOOK_ALLOW_PRIVATE=true, so a local receiver can be used)', () => {
  let t: TestServer
  beforeAll(async () => {
    // A delivery times out after 20 s, longer than any test here holds one (see the slow receiver).
    t = await startTestServer(
      { WEBHOOK_ALLOW_PRIVATE: 'true' },
      { webhookOptions: { retryDelaysMs: RETRIES, timeoutMs: 20_000 } },
    )
  })
  afterAll(() => t.stop())

  test('create, list, delete; the secret is generated when absent and shown once', async () => {
    const user = await registerUser(t)
    const created = await addWebhook(t, user.bearer, { url: 'http://127.0.0.1:9/hook', events: ['image.uploaded'] })
    expect(created.status).toBe(201)
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9]{40}$/)
    expect(created.body.webhook).toMatchObject({
      url: 'http://127.0.0.1:9/hook',
      events: ['image.uploaded'],
      discord: false,
      lastDelivery: null,
    })
    const own = await addWebhook(t, user.bearer, {
      url: 'https://discord.com/api/webhooks/1/abc',
      secret: 'my own secret value',
      events: ['image.deleted', 'image.uploaded'],
    })
    expect(own.status).toBe(201)
    expect(own.body.secret).toBe('my own secret value')
    expect(own.body.webhook.discord).toBe(true)
    const list = await t.json('/api/webhooks', { headers: user.bearer })
    expect(list.status).toBe(200)
    expect(list.body.webhooks.map((w: { id: number }) => w.id)).toEqual([created.body.webhook.id, own.body.webhook.id])
    expect(JSON.stringify(list.body)).not.toContain('whsec_')
    expect(JSON.stringify(list.body)).not.toContain('my own secret value')
    const removed = await t.json(`/api/webhooks/${created.body.webhook.id}`, { method: 'DELETE', headers: user.bearer })
    expect(removed).toMatchObject({ status: 200, body: { success: true } })
    expect((await t.json('/api/webhooks', { headers: user.bearer })).body.webhooks).toHaveLength(1)
    expect(
      (await t.json(`/api/webhooks/${created.body.webhook.id}`, { method: 'DELETE', headers: user.bearer })).status,
    ).toBe(404)
  })

  test('at most 5 per account; bad bodies are 400; no JWT is 401', async () => {
    const user = await registerUser(t)
    for (let i = 0; i < 5; i++)
      expect(
        (await addWebhook(t, user.bearer, { url: `http://127.0.0.1:9/${i}`, events: ['image.uploaded'] })).status,
      ).toBe(201)
    const sixth = await addWebhook(t, user.bearer, { url: 'http://127.0.0.1:9/6', events: ['image.uploaded'] })
    expect(sixth.status).toBe(400)
    expect(sixth.body.error).toContain('5')
    const other = await registerUser(t)
    for (const body of [
      { url: 'ftp://example.com/x', events: ['image.uploaded'] },
      { url: 'not a url', events: ['image.uploaded'] },
      { url: 'http://127.0.0.1:9/', events: [] },
      { url: 'http://127.0.0.1:9/', events: ['image.viewed'] },
      { url: 'http://127.0.0.1:9/', events: ['image.uploaded'], secret: 'short' },
      { events: ['image.uploaded'] },
    ]) {
      const res = await addWebhook(t, other.bearer, body)
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
    expect((await t.json('/api/webhooks')).status).toBe(401)
    expect(
      (
        await t.json('/api/webhooks', {
          method: 'POST',
          ...jsonBody({ url: 'http://127.0.0.1:9/', events: ['image.uploaded'] }),
        })
      ).status,
    ).toBe(401)
  })

  test("another account's webhooks: 404, and not listed", async () => {
    const alice = await registerUser(t)
    const bob = await registerUser(t)
    const hook = (await addWebhook(t, alice.bearer, { url: 'http://127.0.0.1:9/', events: ['image.uploaded'] })).body
      .webhook
    expect((await t.json(`/api/webhooks/${hook.id}`, { method: 'DELETE', headers: bob.bearer })).status).toBe(404)
    expect((await t.json('/api/webhooks', { headers: bob.bearer })).body.webhooks).toEqual([])
    expect((await t.json('/api/webhooks', { headers: alice.bearer })).body.webhooks).toHaveLength(1)
  })

  test('uploads and deletes are delivered, signed (HMAC-SHA256 of the raw body), to the endpoints that asked', async () => {
    const rx = receiver()
    try {
      const user = await userWithKey(t)
      const both = await addWebhook(t, user.bearer, {
        url: `${rx.url}/both`,
        events: ['image.uploaded', 'image.deleted'],
      })
      const deletesOnly = await addWebhook(t, user.bearer, { url: `${rx.url}/deletes`, events: ['image.deleted'] })
      const sentFrom = Math.floor(Date.now() / 1000)
      const image = await upload(t, user.keyHeader, 'hello.png')
      const [hit] = await rx.waitFor(1)
      await settled(t)
      expect(rx.hits).toHaveLength(1)
      expect(hit.path).toBe('/both')
      expect(hit.headers['content-type']).toBe('application/json')
      expect(hit.headers['x-webhook-event']).toBe('image.uploaded')
      expect(hit.headers['x-webhook-delivery']).toMatch(/^[0-9a-f-]{36}$/)
      // Signed when it was sent: between the upload and the delivery's arrival.
      expect(Number(hit.headers['x-webhook-timestamp'])).toBeGreaterThanOrEqual(sentFrom)
      expect(Number(hit.headers['x-webhook-timestamp'])).toBeLessThanOrEqual(hit.at / 1000)
      expect(verify(both.body.secret, hit)).toBe(true)
      expect(verify(deletesOnly.body.secret, hit)).toBe(false)
      const payload = JSON.parse(hit.body)
      expect(payload).toMatchObject({ id: hit.headers['x-webhook-delivery'], event: 'image.uploaded' })
      expect(payload.image).toMatchObject({
        id: image.id,
        url: image.url,
        thumbnail: image.thumbnail,
        viewer: image.viewer,
        filename: 'hello.png',
        width: 16,
        height: 16,
        size: image.size,
        mime: 'image/png',
        visibility: 'public',
        nsfw: false,
      })
      expect(Date.parse(payload.timestamp)).toBeGreaterThan(0)

      // A tampered body does not verify.
      expect(verify(both.body.secret, { ...hit, body: hit.body.replace('hello', 'hellO') })).toBe(false)

      expect((await t.json(`/api/v1/image/${image.id}`, { method: 'DELETE', headers: user.keyHeader })).status).toBe(
        200,
      )
      const hits = await rx.waitFor(3)
      const deleted = hits.slice(1).sort((a, b) => a.path.localeCompare(b.path))
      expect(deleted.map((h) => h.path)).toEqual(['/both', '/deletes'])
      expect(deleted.every((h) => h.headers['x-webhook-event'] === 'image.deleted')).toBe(true)
      expect(verify(both.body.secret, deleted[0])).toBe(true)
      expect(verify(deletesOnly.body.secret, deleted[1])).toBe(true)
      expect(JSON.parse(deleted[0].body).image.id).toBe(image.id)

      const listed = (await t.json('/api/webhooks', { headers: user.bearer })).body.webhooks
      expect(listed[0].lastDelivery).toMatchObject({ status: 200, error: null })
    } finally {
      rx.stop()
    }
  })

  test('web uploads (JWT) and resumable (tus) uploads are delivered too; anonymous ones have no account to notify', async () => {
    const rx = receiver()
    try {
      const user = await userWithKey(t)
      await addWebhook(t, user.bearer, { url: rx.url, events: ['image.uploaded'] })
      const web = await t.json('/api/upload', {
        method: 'POST',
        headers: user.bearer,
        body: uploadForm([{ bytes: await makeImage('png', 8, 8) }]),
      })
      expect(web.status).toBe(201)
      const png = await makeImage('png', 9, 9)
      const created = await t.fetch('/api/v1/tus', {
        method: 'POST',
        headers: { ...user.keyHeader, 'tus-resumable': '1.0.0', 'upload-length': String(png.length) },
      })
      const done = await fetch(created.headers.get('location')!, {
        method: 'PATCH',
        headers: {
          ...user.keyHeader,
          'tus-resumable': '1.0.0',
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
        },
        body: png,
      })
      const tusImage = await done.json()
      await t.json('/api/upload', { method: 'POST', body: uploadForm([{ bytes: await makeImage('png', 7, 7) }]) })
      const hits = await rx.waitFor(2)
      await settled(t)
      expect(hits).toHaveLength(2)
      expect(hits.map((h) => JSON.parse(h.body).image.id).sort()).toEqual([web.body.id, tusImage.id].sort())
    } finally {
      rx.stop()
    }
  })

  test('a failing receiver is retried with backoff, with the same delivery id, until it answers 2xx', async () => {
    const rx = receiver((_, n) => new Response('down', { status: n <= 2 ? 500 : 204 }))
    try {
      const user = await userWithKey(t)
      const hook = await addWebhook(t, user.bearer, { url: rx.url, events: ['image.uploaded'] })
      await upload(t, user.keyHeader)
      const hits = await rx.waitFor(3)
      await settled(t)
      expect(hits).toHaveLength(3)
      expect(new Set(hits.map((h) => h.headers['x-webhook-delivery'])).size).toBe(1)
      expect(new Set(hits.map((h) => h.body)).size).toBe(1)
      expect(hits.map((h) => h.headers['x-webhook-attempt'])).toEqual(['1', '2', '3'])
      expect(hits.every((h) => verify(hook.body.secret, h))).toBe(true)
      expect(hits[1].at - hits[0].at).toBeGreaterThanOrEqual(RETRIES[0] - 5)
      expect(hits[2].at - hits[1].at).toBeGreaterThanOrEqual(RETRIES[1] - 5)
      const listed = (await t.json('/api/webhooks', { headers: user.bearer })).body.webhooks
      expect(listed[0].lastDelivery).toMatchObject({ status: 204, error: null })
    } finally {
      rx.stop()
    }
  })

  test('a receiver that always fails gets the first try plus one per retry delay, then is given up', async () => {
    const rx = receiver(() => new Response('nope', { status: 503 }))
    try {
      const user = await userWithKey(t)
      await addWebhook(t, user.bearer, { url: rx.url, events: ['image.uploaded'] })
      await upload(t, user.keyHeader)
      await rx.waitFor(1)
      await settled(t)
      expect(rx.hits).toHaveLength(1 + RETRIES.length)
      const listed = (await t.json('/api/webhooks', { headers: user.bearer })).body.webhooks
      expect(listed[0].lastDelivery).toMatchObject({ status: 503, error: 'HTTP 503' })
      expect(t.server.services.webhooks.pending()).toBe(0)
    } finally {
      rx.stop()
    }
  })

  test('redirects are not followed (a 3xx is a failed delivery)', async () => {
    const target = receiver()
    const rx = receiver(() => new Response(null, { status: 302, headers: { location: `${target.url}/elsewhere` } }))
    try {
      const user = await userWithKey(t)
      await addWebhook(t, user.bearer, { url: rx.url, events: ['image.uploaded'] })
      await upload(t, user.keyHeader)
      await rx.waitFor(1)
      await settled(t)
      // Every attempt went to the redirecting endpoint (a 3xx is retried as a failure), none to where it pointed.
      expect(rx.hits).toHaveLength(1 + RETRIES.length)
      expect(target.hits).toHaveLength(0)
    } finally {
      rx.stop()
      target.stop()
    }
  })

  test('a slow receiver never holds an upload up', async () => {
    // The receiver answers only once the test lets it, after both uploads were answered and a delivery has arrived.
    // An upload that waited for its delivery could not be answered before that (the delivery timeout is 20 s): it
    // would time out first, and its delivery would be recorded as failed.
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const rx = receiver(async () => {
      await held
      return new Response('late')
    })
    try {
      const user = await userWithKey(t)
      await addWebhook(t, user.bearer, { url: rx.url, events: ['image.uploaded'] })
      await upload(t, user.keyHeader)
      await upload(t, user.keyHeader)
      await rx.waitFor(1)
      const lastDelivery = async () =>
        (await t.json('/api/webhooks', { headers: user.bearer })).body.webhooks[0].lastDelivery
      expect(await lastDelivery()).toBeNull() // answered while every delivery was still out
      release()
      await settled(t)
      expect(rx.hits).toHaveLength(2)
      expect(await lastDelivery()).toMatchObject({ status: 200, error: null })
    } finally {
      release()
      rx.stop()
    }
  })
})

describe('SSRF: private targets are refused (WEBHOOK_ALLOW_PRIVATE unset)', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({}, { webhookOptions: { retryDelaysMs: [50], timeoutMs: 1000 } })
  })
  afterAll(() => t.stop())

  test('at creation: loopback, private, link-local, unspecified, IPv6 and IPv4-mapped forms, and names resolving to them', async () => {
    const user = await registerUser(t)
    for (const url of [
      'http://127.0.0.1/hook',
      'http://127.1.2.3:8080/hook',
      'http://10.0.0.1/hook',
      'http://172.16.5.4/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://0.0.0.0/hook',
      'http://[::1]/hook',
      'http://[::]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[fd00::1]/hook',
      'http://[fe80::1]/hook',
      'http://2130706433/hook',
      'http://0x7f.1/hook',
      'http://localhost:3000/hook',
      'http://LOCALHOST./hook',
    ]) {
      const res = await addWebhook(t, user.bearer, { url, events: ['image.uploaded'] })
      expect({ url, status: res.status }).toEqual({ url, status: 400 })
      expect(res.body.error).toContain('refused')
    }
    expect((await t.json('/api/webhooks', { headers: user.bearer })).body.webhooks).toEqual([])
  })

  test('at delivery: an endpoint that has become private is never contacted', async () => {
    const rx = receiver()
    try {
      const user = await userWithKey(t)
      // As if it had been public at creation and its name now resolved to this machine (DNS rebinding).
      await t.server.db.insert(webhooksTable).values({
        userId: user.user.id,
        url: `http://localhost:${new URL(rx.url).port}/hook`,
        secret: 'x'.repeat(32),
        events: '["image.uploaded"]',
      })
      await t.server.db.insert(webhooksTable).values({
        userId: user.user.id,
        url: `${rx.url}/literal`,
        secret: 'x'.repeat(32),
        events: '["image.uploaded"]',
      })
      await upload(t, user.keyHeader)
      // Both refusals are recorded (permanent: no retry), and by then nothing has reached the receiver.
      const listed = async () =>
        (await t.json('/api/webhooks', { headers: user.bearer })).body.webhooks as { lastDelivery: unknown }[]
      await eventually(
        async () => (await listed()).every((hook) => hook.lastDelivery !== null),
        undefined,
        'both refusals recorded',
      )
      await settled(t)
      expect(rx.hits).toHaveLength(0)
      expect(await listed()).toHaveLength(2)
      for (const hook of (await listed()) as { lastDelivery: { status: number; error: string } }[]) {
        expect(hook.lastDelivery.status).toBe(0)
        expect(hook.lastDelivery.error).toContain('private')
      }
    } finally {
      rx.stop()
    }
  })
})

describe('addresses and payloads', () => {
  test('isPrivateAddress', () => {
    const refused = [
      '127.0.0.1',
      '127.255.255.254',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fc00::1',
      'fdff::1',
      'fe80::1',
      'fe80::1%eth0',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::7f00:1',
      '2002:7f00:1::',
      '2002:c0a8:101::1',
      'ff02::1',
      'not-an-address',
    ]
    const allowed = [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '192.169.0.1',
      '2606:4700:4700::1111',
      '2a00:1450:4001:80b::200e',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
    ]
    expect(refused.filter((a) => !isPrivateAddress(a))).toEqual([])
    expect(allowed.filter((a) => isPrivateAddress(a))).toEqual([])
  })

  const image = {
    id: 'AbCdEf12',
    userId: 1,
    filename: 'cat.png',
    mime: 'image/png',
    ext: 'png',
    width: 640,
    height: 480,
    size: 123456,
    sha256: 'x',
    visibility: 'public',
    nsfw: false,
    scanStatus: 'done',
    views: 0,
    deleteTokenHash: null,
    embedProfileId: null,
    uploaderIp: null,
    createdAt: new Date('2026-11-22T10:00:00.000Z'),
    expiresAt: null,
  } as unknown as Image
  const ctx = {
    base: { publicUrl: 'https://img.example', cdnBase: 'https://cdn.example' },
    siteName: 'imghost',
    siteColor: '#3b82f6',
  }

  test('Discord webhook URLs get an embed with the viewer link and the image', () => {
    expect(isDiscordUrl('https://discord.com/api/webhooks/123/token')).toBe(true)
    expect(isDiscordUrl('https://discordapp.com/api/webhooks/123/token')).toBe(true)
    expect(isDiscordUrl('https://ptb.discord.com/api/v10/webhooks/123/token')).toBe(true)
    expect(isDiscordUrl('https://discord.com.evil.example/api/webhooks/1/t')).toBe(false)
    expect(isDiscordUrl('http://discord.com/api/webhooks/1/t')).toBe(false)
    const body = JSON.parse(
      deliveryBody(
        ctx,
        'https://discord.com/api/webhooks/1/t',
        { id: 'd1', event: 'image.uploaded', at: Date.parse('2026-11-22T10:00:01.000Z') },
        image,
      ),
    )
    expect(body.embeds).toHaveLength(1)
    expect(body.embeds[0]).toMatchObject({
      title: 'cat.png',
      url: 'https://img.example/i/AbCdEf12',
      image: { url: 'https://cdn.example/cdn/AbCdEf12.png' },
      color: 0x3b82f6,
      timestamp: '2026-11-22T10:00:01.000Z',
    })
    expect(body.allowed_mentions).toEqual({ parse: [] })
    // NSFW images are not shown in the channel; deletions are described, without an image.
    const nsfw = JSON.parse(
      deliveryBody(
        ctx,
        'https://discord.com/api/webhooks/1/t',
        { id: 'd2', event: 'image.uploaded', at: 0 },
        { ...image, nsfw: true },
      ),
    )
    expect(nsfw.embeds[0].image).toBeUndefined()
    const deleted = JSON.parse(
      deliveryBody(ctx, 'https://discord.com/api/webhooks/1/t', { id: 'd3', event: 'image.deleted', at: 0 }, image),
    )
    expect(deleted.embeds[0].title).toContain('cat.png')
    expect(deleted.embeds[0].image).toBeUndefined()
  })

  test('other URLs get the generic body', () => {
    const body = JSON.parse(
      deliveryBody(ctx, 'https://hooks.example/x', { id: 'd1', event: 'image.uploaded', at: 0 }, image),
    )
    expect(body).toEqual({
      id: 'd1',
      event: 'image.uploaded',
      timestamp: '1970-01-01T00:00:00.000Z',
      image: {
        id: 'AbCdEf12',
        url: 'https://cdn.example/cdn/AbCdEf12.png',
        thumbnail: 'https://cdn.example/cdn/medium/AbCdEf12.webp',
        viewer: 'https://img.example/i/AbCdEf12',
        filename: 'cat.png',
        width: 640,
        height: 480,
        size: 123456,
        mime: 'image/png',
        visibility: 'public',
        nsfw: false,
        created_at: '2026-11-22T10:00:00.000Z',
      },
    })
  })
})
