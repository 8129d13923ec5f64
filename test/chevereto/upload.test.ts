import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { type Bytes, makeImage, makeNoisePng } from '../fixtures'
import { eventually, jsonBody, startTestServer, type TestServer, userWithKey } from '../helpers'
import { filler } from '../security/support'

// Chevereto API v1 (POST /api/1/upload) as its clients send it, against the real server: ShareX's Chevereto
// destination (multipart, `key` and `format` fields, the file in `source`), PicGo's plugin (X-API-Key, `source`), and
// scripts (base64 in a urlencoded body or a multipart field, ?key=).

const MAX_FILE_SIZE = 200_000
let t: TestServer
let alice: Awaited<ReturnType<typeof userWithKey>>
let png: Bytes

beforeAll(async () => {
  // A local webhook receiver is used below.
  t = await startTestServer({ MAX_FILE_SIZE: String(MAX_FILE_SIZE), WEBHOOK_ALLOW_PRIVATE: 'true' })
  alice = await userWithKey(t)
  png = await makeImage('png', 64, 48, 7)
})
afterAll(() => t.stop())

const fileBlob = (bytes: Bytes) => new Blob([bytes], { type: 'image/png' })

function form(fields: [string, string | Blob][]) {
  const body = new FormData()
  for (const [name, value] of fields) {
    if (typeof value === 'string') body.append(name, value)
    else body.append(name, value, 'shot.png')
  }
  return body
}

const post = (body: BodyInit, headers: Record<string, string> = {}, query = '') =>
  t.fetch(`/api/1/upload${query}`, { method: 'POST', body, headers, redirect: 'manual' })

async function answer(res: Response) {
  return { status: res.status, headers: res.headers, body: (await res.json()) as any }
}

/** Reads the answer's links as the clients do, and checks each serves what was stored. */
async function expectServed(image: any, bytes: Bytes) {
  const original = await fetch(image.url)
  expect(original.status).toBe(200)
  expect(new Uint8Array(await original.arrayBuffer())).toEqual(bytes)
  const thumb = await fetch(image.thumb.url)
  expect(thumb.status).toBe(200)
  expect(thumb.headers.get('content-type')).toBe('image/webp')
  expect((await fetch(image.url_viewer)).status).toBe(200)
  expect((await fetch(image.display_url)).status).toBe(200)
}

const metricsText = () => t.server.services.metrics.render({ storageUsedBytes: 0, queueDepth: 0 })

const base64 = (bytes: Bytes) => Buffer.from(bytes).toString('base64')

describe('POST /api/1/upload: the clients', () => {
  test('ShareX Chevereto destination: multipart key, format=json, file in source', async () => {
    const res = await answer(
      await post(
        form([
          ['key', alice.apiKey],
          ['action', 'upload'],
          ['format', 'json'],
          ['source', fileBlob(png)],
        ]),
      ),
    )
    expect(res.status).toBe(200)
    expect(res.body.status_code).toBe(200)
    expect(res.body.status_txt).toBe('OK')
    expect(res.body.success).toEqual({ message: 'image uploaded', code: 200 })
    expect(res.body.image).toMatchObject({
      name: 'shot',
      extension: 'png',
      original_filename: 'shot.png',
      width: 64,
      height: 48,
      size: png.length,
      mime: 'image/png',
      nsfw: 0,
    })
    expect(res.body.image.date).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    expect(res.headers.get('ratelimit-remaining')).toBeTruthy()
    await expectServed(res.body.image, png)
    // The same image as our own API sees it: one pipeline, one row.
    const details = await t.json(`/api/v1/image/${res.body.image.id_encoded}`)
    expect(details.body.data.url).toBe(res.body.image.url)
    expect(details.body.data.viewer).toBe(res.body.image.url_viewer)
  })

  test('fields in any order: the key after the source (a file or base64), as PHP reads the whole form', async () => {
    for (const source of [fileBlob(png), base64(png)]) {
      const res = await answer(
        await post(
          form([
            ['source', source],
            ['format', 'json'],
            ['key', alice.apiKey],
          ]),
        ),
      )
      expect(res.status).toBe(200)
      expect(res.body.status_code).toBe(200)
      await expectServed(res.body.image, png)
    }
  })

  test('a key after the source is still checked: missing, wrong or banned, and nothing is stored', async () => {
    const before = (await t.json('/api/v1/me', { headers: alice.keyHeader })).body.totalImages
    const late = async (key: string | null) => {
      const fields: [string, string | Blob][] = [['source', fileBlob(png)]]
      if (key !== null) fields.push(['key', key])
      const res = await answer(await post(form(fields)))
      return { status: res.status, code: res.body.status_code, message: res.body.error?.message }
    }
    expect(await late(null)).toMatchObject({
      status: 401,
      code: 401,
      message: expect.stringMatching(/Missing API key/),
    })
    const wrong = 'ihk_'.padEnd(44, 'x')
    expect(await late(wrong)).toMatchObject({
      status: 401,
      code: 401,
      message: expect.stringMatching(/Invalid API key/),
    })
    const banned = await userWithKey(t)
    await t.server.services.admin.updateUser(banned.user.id, { banned: true })
    expect((await late(banned.apiKey)).status).toBe(403)
    expect((await t.json('/api/v1/me', { headers: alice.keyHeader })).body.totalImages).toBe(before)
  })

  test('PicGo: X-API-Key header, file in source', async () => {
    const res = await answer(await post(form([['source', fileBlob(png)]]), alice.keyHeader))
    expect(res.status).toBe(200)
    expect(res.body.status_code).toBe(200)
    await expectServed(res.body.image, png)
  })

  test('base64 in a urlencoded body, key in the body, a data-URL prefix and an unencoded + tolerated', async () => {
    const text = `data:image/png;base64,${base64(png)}`
    // Sent raw: `+` then reads as a space, as it would from a careless script.
    const body = `key=${encodeURIComponent(alice.apiKey)}&source=${text.replace(/\//g, '%2F').replace(/=/g, '%3D')}`
    const res = await answer(await post(body, { 'content-type': 'application/x-www-form-urlencoded' }))
    expect(res.status).toBe(200)
    expect(res.body.image.size).toBe(png.length)
    await expectServed(res.body.image, png)
  })

  test('base64 in a multipart field, the key in ?key=', async () => {
    const res = await answer(
      await post(form([['source', base64(png)]]), {}, `?key=${encodeURIComponent(alice.apiKey)}`),
    )
    expect(res.status).toBe(200)
    await expectServed(res.body.image, png)
  })

  test('format=txt answers the direct link as text; format=redirect a 303 to the viewer', async () => {
    const txt = await post(
      form([
        ['format', 'txt'],
        ['source', fileBlob(png)],
      ]),
      alice.keyHeader,
    )
    expect(txt.status).toBe(200)
    expect(txt.headers.get('content-type')).toStartWith('text/plain')
    expect(txt.headers.get('x-content-type-options')).toBe('nosniff')
    const link = await txt.text()
    expect(link).toMatch(/^http:\/\/.+\/cdn\/[A-Za-z0-9]{8}\.png$/)
    expect((await fetch(link)).status).toBe(200)

    const redirect = await post(form([['source', fileBlob(png)]]), alice.keyHeader, '?format=redirect')
    expect(redirect.status).toBe(303)
    const viewer = redirect.headers.get('location')!
    expect(viewer).toMatch(/\/i\/[A-Za-z0-9]{8}$/)
    expect((await fetch(viewer)).status).toBe(200)
  })

  test('nsfw, expiration and album_id are ours; title and description are ignored', async () => {
    const res = await answer(
      await post(
        form([
          ['nsfw', '1'],
          ['expiration', 'PT10M'],
          ['album_id', 'Screenshots'],
          ['title', 'ignored'],
          ['description', 'ignored'],
          ['source', fileBlob(png)],
        ]),
        alice.keyHeader,
      ),
    )
    expect(res.status).toBe(200)
    expect(res.body.image.nsfw).toBe(1)
    const details = (await t.json(`/api/v1/image/${res.body.image.id_encoded}`)).body.data
    expect(details.nsfw).toBe(true)
    const minutes = (Date.parse(details.expiresAt) - Date.parse(details.uploadedAt)) / 60_000
    expect(Math.round(minutes)).toBe(10)
    const albums = await t.json('/api/albums', { headers: alice.bearer })
    expect(JSON.stringify(albums.body)).toContain('Screenshots')
  })
})

describe('POST /api/1/upload: refusals in Chevereto shape, with our statuses', () => {
  async function expectError(res: Response, status: number, message: RegExp) {
    const { body } = await answer(res)
    expect(res.status).toBe(status)
    expect(body.status_code).toBe(status)
    expect(body.error.code).toBe(status)
    expect(body.error.message).toMatch(message)
    expect(typeof body.status_txt).toBe('string')
    expect(body.image).toBeUndefined()
  }

  test('no key: 401', async () => {
    await expectError(await post(form([['source', fileBlob(png)]])), 401, /Missing API key/)
  })

  test('a banned account: 403 whichever way the key comes', async () => {
    const banned = await userWithKey(t)
    await t.server.services.admin.updateUser(banned.user.id, { banned: true })
    await expectError(await post(form([['source', fileBlob(png)]]), banned.keyHeader), 403, /./)
    await expectError(
      await post(
        form([
          ['key', banned.apiKey],
          ['source', fileBlob(png)],
        ]),
      ),
      403,
      /./,
    )
  })

  test('a JSON body: 400 saying the API reads a form, not the 401 of a key it cannot read', async () => {
    const json = { 'content-type': 'application/json' }
    const body = JSON.stringify({ key: alice.apiKey, source: base64(png) })
    await expectError(await post(body, json), 400, /form fields .*not JSON/)
    // A key sent upfront is checked first, as on every keyed route.
    await expectError(await post(body, { ...json, 'x-api-key': 'ihk_'.padEnd(44, 'x') }), 401, /Invalid API key/)
    await expectError(await post(body, { ...json, ...alice.keyHeader }), 400, /not application\/json/)
  })

  test('a wrong key (header, query or field): 401', async () => {
    const wrong = 'ihk_'.padEnd(44, 'x')
    await expectError(await post(form([['source', fileBlob(png)]]), { 'x-api-key': wrong }), 401, /Invalid API key/)
    await expectError(await post(form([['source', fileBlob(png)]]), {}, `?key=${wrong}`), 401, /Invalid API key/)
    await expectError(
      await post(
        form([
          ['key', wrong],
          ['source', fileBlob(png)],
        ]),
      ),
      401,
      /Invalid API key/,
    )
  })

  test('not an image: 400, as a file or as base64', async () => {
    const text = new TextEncoder().encode('just some text, not an image')
    await expectError(await post(form([['source', fileBlob(text)]]), alice.keyHeader), 400, /./)
    await expectError(await post(form([['source', base64(text)]]), alice.keyHeader), 400, /./)
    await expectError(await post(form([['source', 'not base64 at all!']]), alice.keyHeader), 400, /base64/)
  })

  test('no source, a link, another file field, an unknown format: 400', async () => {
    await expectError(await post(form([['format', 'json']]), alice.keyHeader), 400, /Missing source/)
    // A link to a loopback address, refused by the address rules of URL uploads (URL_UPLOAD_ALLOW_PRIVATE is off).
    await expectError(
      await post(form([['source', 'http://127.0.0.1:9/a.png']]), alice.keyHeader),
      400,
      /is not allowed/,
    )
    const other = new FormData()
    other.append('file', fileBlob(png), 'a.png')
    await expectError(await post(other, alice.keyHeader), 400, /send the file as `source`/)
    await expectError(await post(form([['source', fileBlob(png)]]), alice.keyHeader, '?format=xml'), 400, /format/)
    await expectError(await post('{}', { ...alice.keyHeader, 'content-type': 'text/plain' }), 400, /multipart/)
  })

  test('too big: 413 for a file, for base64 past the per-file limit, and for a body past its bound', async () => {
    const big = await makeNoisePng(300)
    expect(big.length).toBeGreaterThan(MAX_FILE_SIZE)
    await expectError(await post(form([['source', fileBlob(big)]]), alice.keyHeader), 413, /too large/)
    // Just past the limit once decoded: the decoder refuses it (the text itself is within its bounds).
    const over = crypto.getRandomValues(new Uint8Array(MAX_FILE_SIZE + 1000))
    await expectError(await post(form([['source', base64(over)]]), alice.keyHeader), 413, /too large/)
    const urlencoded = { ...alice.keyHeader, 'content-type': 'application/x-www-form-urlencoded' }
    await expectError(await post(`source=${encodeURIComponent(base64(over))}`, urlencoded), 413, /too large/)
    // Far past it: a multipart text part is refused while it streams.
    await expectError(await post(form([['source', 'A'.repeat(2 * 1024 * 1024)]]), alice.keyHeader), 413, /too large/)
    // A file before its key is received under the per-file limit every key has, and refused past it as it streams.
    await expectError(
      await post(
        form([
          ['source', fileBlob(big)],
          ['key', alice.apiKey],
        ]),
      ),
      413,
      /too large/,
    )
    // Past the bound of a whole urlencoded body (read before its key is known): refused once past it, declared or
    // not. The chunked one stalls there without ending, so only a server that stops at the bound can answer.
    const huge = `source=${'A'.repeat(2 * 1024 * 1024)}`
    const formType = { 'content-type': 'application/x-www-form-urlencoded' }
    await expectError(await post(huge, formType), 413, /Request body too large/)
    const stalled = filler({ prefix: 'source=', total: 2 * 1024 * 1024, stall: true })
    await expectError(await post(stalled.stream as never, formType), 413, /Request body too large/)
  })
})

describe('POST /api/1/upload: the pipeline of /api/v1/upload', () => {
  test('webhooks are told and the upload metrics count it', async () => {
    const hits: string[] = []
    const hook = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        hits.push(await request.text())
        return new Response('ok')
      },
    })
    try {
      const created = await t.json('/api/webhooks', {
        method: 'POST',
        ...jsonBody({ url: `http://127.0.0.1:${hook.port}/hook`, events: ['image.uploaded'] }, alice.bearer),
      })
      expect(created.status).toBe(201)
      const counted = () => Number(/^uploads_total (\d+)$/m.exec(metricsText())?.[1] ?? 0)
      const before = counted()
      const res = await answer(await post(form([['source', fileBlob(png)]]), alice.keyHeader))
      expect(res.status).toBe(200)
      expect(counted()).toBe(before + 1)
      await eventually(() => hits.length > 0, undefined, 'the webhook delivery')
      expect(hits[0]).toContain(res.body.image.id_encoded)
    } finally {
      hook.stop(true)
    }
  })
})

describe('POST /api/1/upload: the account limits of /api/v1/upload', () => {
  let limited: TestServer
  beforeAll(async () => {
    limited = await startTestServer({ UPLOADS_PER_HOUR: '1' })
  })
  afterAll(() => limited.stop())

  test('rate limited: 429 with Retry-After and RateLimit-*, shared with /api/v1/upload', async () => {
    const bob = await userWithKey(limited)
    const ours = new FormData()
    ours.append('file', fileBlob(png), 'a.png')
    const first = await limited.fetch('/api/v1/upload', { method: 'POST', headers: bob.keyHeader, body: ours })
    expect(first.status).toBe(201)
    const res = await limited.fetch('/api/1/upload', {
      method: 'POST',
      headers: bob.keyHeader,
      body: form([['source', fileBlob(png)]]),
    })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(res.headers.get('ratelimit-remaining')).toBe('0')
    const body = (await res.json()) as any
    expect(body.status_code).toBe(429)
    expect(body.error.message).toMatch(/rate limit/i)
  })
})

describe('POST /api/1/upload: files before their key, at most UPLOADS_IN_FLIGHT_PER_IP at once from one address', () => {
  let capped: TestServer
  let bob: Awaited<ReturnType<typeof userWithKey>>
  beforeAll(async () => {
    capped = await startTestServer({ UPLOADS_IN_FLIGHT_PER_IP: '1' })
    bob = await userWithKey(capped)
  })
  afterAll(() => capped.stop())

  const keyLast = (key = bob.apiKey) =>
    capped.fetch('/api/1/upload', {
      method: 'POST',
      body: form([
        ['source', fileBlob(png)],
        ['key', key],
      ]),
    })
  // A keyless reception that stores nothing: 401 once received while the address's slot is free, 429 while it is held.
  // (A real upload as the probe would spend bob's hourly window while the stalled body takes its slot.)
  const probe = () => keyLast('not-a-key')

  test('a second keyless reception waits (429 in Chevereto shape); a keyed one is not held by it; the slot comes back', async () => {
    // A body whose file part begins and then stalls: its key never comes, so it holds the address's one slot.
    const boundary = 'stalledBoundary'
    const prefix = `--${boundary}\r\nContent-Disposition: form-data; name="source"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`
    // Over a socket of our own: the head and the file part's first bytes are on the wire at once, then nothing more
    // (a client's streamed body may be held back by its own buffering, which left the slot free in some runs).
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(capped.url).port) })
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.on('error', () => {})
    socket.write(
      `POST /api/1/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
        `Content-Length: ${1024 * 1024}\r\n\r\n${prefix}`,
    )
    socket.write(Buffer.alloc(64 * 1024, 0x61))
    let refused: Response | undefined
    await eventually(
      async () => {
        const res = await probe()
        if (res.status === 429) refused = res
        return refused !== undefined
      },
      undefined,
      'a keyless upload refused while another is received',
    )
    const body = (await refused!.json()) as any
    expect(body.status_code).toBe(429)
    expect(body.error.message).toMatch(/send the key first/)
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0)
    // The key first: admitted as any keyed upload, beside the keyless one.
    const keyed = await capped.fetch('/api/1/upload', {
      method: 'POST',
      headers: bob.keyHeader,
      body: form([['source', fileBlob(png)]]),
    })
    expect(keyed.status).toBe(200)
    socket.destroy()
    await eventually(async () => (await probe()).status === 401, undefined, 'the slot released by the cut-off body')
    expect((await keyLast()).status).toBe(200)
  })
})

test('OpenAPI: its own tag, both request bodies, the key in the query or the header, the error shape', async () => {
  const doc = (await t.json('/swagger/json')).body
  const op = doc.paths['/api/1/upload'].post
  expect(op.tags).toEqual(['Chevereto API'])
  expect(doc.tags.map((tag: { name: string }) => tag.name)).toContain('Chevereto API')
  expect(Object.keys(op.requestBody.content).sort()).toEqual([
    'application/x-www-form-urlencoded',
    'multipart/form-data',
  ])
  expect(op.requestBody.content['multipart/form-data'].schema.required).toEqual(['source'])
  expect(op.security).toEqual([{ apiKey: [] }, { apiKeyQuery: [] }])
  expect(doc.components.securitySchemes.apiKeyQuery).toMatchObject({ in: 'query', name: 'key' })
  for (const status of ['200', '400', '401', '403', '413', '429']) expect(op.responses[status]).toBeDefined()
  const get = doc.paths['/api/1/upload'].get
  expect(get.tags).toEqual(['Chevereto API'])
  expect(get.security).toEqual([{ apiKey: [] }, { apiKeyQuery: [] }])
  expect(get.parameters.map((p: { name: string }) => p.name)).toEqual(
    expect.arrayContaining(['key', 'source', 'format']),
  )
})

describe('POST /api/1/upload: a link in `source`, fetched like a url of /api/v1/upload', () => {
  let linked: TestServer
  let bob: Awaited<ReturnType<typeof userWithKey>>
  let origin: ReturnType<typeof Bun.serve>
  beforeAll(async () => {
    // The picture server is on loopback, so this server lets URL uploads reach private addresses.
    linked = await startTestServer({ URL_UPLOAD_ALLOW_PRIVATE: 'true' })
    bob = await userWithKey(linked)
    origin = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (req) =>
        new URL(req.url).pathname === '/shot.png'
          ? new Response(png, { headers: { 'content-type': 'image/png' } })
          : new Response('gone', { status: 404 }),
    })
  })
  afterAll(async () => {
    origin.stop(true)
    await linked.stop()
  })

  const postTo = (body: BodyInit, headers: Record<string, string>) =>
    linked.fetch('/api/1/upload', { method: 'POST', body, headers })

  test('a link as a multipart field and in a urlencoded body: stored, and served as fetched', async () => {
    const link = `http://127.0.0.1:${origin.port}/shot.png`
    for (const body of [form([['source', link]]), new URLSearchParams({ source: link })]) {
      const res = await answer(await postTo(body, bob.keyHeader))
      expect(res.status).toBe(200)
      expect(res.body.status_code).toBe(200)
      expect(res.body.image.width).toBe(64)
      await expectServed(res.body.image, png)
    }
  })

  test("the GET form of Chevereto's docs, with and without the trailing slash: the answers of the POST", async () => {
    const link = `http://127.0.0.1:${origin.port}/shot.png`
    for (const path of ['/api/1/upload', '/api/1/upload/']) {
      const query = new URLSearchParams({ key: bob.apiKey, source: link, format: 'json' })
      const res = await answer(await linked.fetch(`${path}?${query}`))
      expect(res.status).toBe(200)
      expect(res.body.status_code).toBe(200)
      expect(res.body.image.width).toBe(64)
      await expectServed(res.body.image, png)
    }
    const txt = await linked.fetch(
      `/api/1/upload?${new URLSearchParams({ key: bob.apiKey, source: link, format: 'txt' })}`,
    )
    expect(txt.status).toBe(200)
    expect(await txt.text()).toMatch(/\/cdn\/[A-Za-z0-9]{8}\.png$/)
  })

  test('the GET form refuses as the POST does: no key, a wrong key, no source, a failing link', async () => {
    const link = `http://127.0.0.1:${origin.port}/shot.png`
    const get = async (params: Record<string, string>) => {
      const res = await answer(await linked.fetch(`/api/1/upload?${new URLSearchParams(params)}`))
      return { status: res.status, code: res.body.status_code, message: res.body.error?.message as string }
    }
    expect(await get({ source: link })).toMatchObject({ status: 401, code: 401 })
    expect(await get({ key: 'ihk_'.padEnd(44, 'x'), source: link })).toMatchObject({ status: 401, code: 401 })
    expect(await get({ key: bob.apiKey })).toMatchObject({
      status: 400,
      message: expect.stringMatching(/Missing source/),
    })
    const failing = await get({ key: bob.apiKey, source: `http://127.0.0.1:${origin.port}/none.png` })
    expect(failing).toMatchObject({ status: 400, code: 400, message: expect.stringMatching(/404/) })
  })

  test('the GET form fetches with the address rules of URL uploads: a loopback link is refused by default', async () => {
    const res = await answer(
      await t.fetch(`/api/1/upload?${new URLSearchParams({ key: alice.apiKey, source: 'http://127.0.0.1:9/a.png' })}`),
    )
    expect(res.status).toBe(400)
    expect(res.body.error.message).toMatch(/is not allowed/)
  })

  test('a link that fails (404) is a 400 saying so, in Chevereto shape, and stores nothing', async () => {
    const before = (await linked.json('/api/v1/me', { headers: bob.keyHeader })).body.totalImages
    const res = await answer(
      await postTo(form([['source', `http://127.0.0.1:${origin.port}/none.png`]]), bob.keyHeader),
    )
    expect(res.status).toBe(400)
    expect(res.body.status_code).toBe(400)
    expect(res.body.error.message).toMatch(/404/)
    const after = (await linked.json('/api/v1/me', { headers: bob.keyHeader })).body.totalImages
    expect(after).toBe(before)
  })
})
