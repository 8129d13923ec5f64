import { afterEach, describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { count, like } from 'drizzle-orm'
import { run } from '../../src/db/client'
import { images, uploadWindows } from '../../src/db/schema'
import { makeImage, uploadForm } from '../fixtures'
import {
  makeAdmin,
  registerUser,
  startTestServer,
  type TestServer,
  testClock,
  userWithKey,
  whileHealthy,
} from '../helpers'
import { nestedUseSvg } from '../media/hostile-files'
import { countingMedia, expectRateLimitHeaders, filler, neutralClassifier, rawRequest } from './support'

let servers: TestServer[] = []
afterEach(async () => {
  await Promise.all(servers.map((t) => t.stop()))
  servers = []
})

async function fresh(env: Record<string, string> = {}) {
  // A short time budget, so the slow SVG is refused (killed) after a second rather than the default 20.
  const spy = countingMedia({ maxPixels: Number(env.MAX_IMAGE_PIXELS ?? 100_000_000), timeoutMs: 1000 })
  const clock = testClock(Date.now())
  const t = await startTestServer(
    { GLOBAL_RATE_LIMIT: '100000', ...env },
    { classifier: neutralClassifier, media: spy.media, now: clock.now },
  )
  servers.push(t)
  return { t, calls: spy.calls, clock }
}

let seed = 1
const image = () => makeImage('png', 16, 16, seed++)
const notAnImage = new TextEncoder().encode('just some text, not an image at all\n'.repeat(20))

const post = (
  t: TestServer,
  path: string,
  bytes: Uint8Array,
  headers: Record<string, string> = {},
  fields: Record<string, string> = {},
) => t.json(path, { method: 'POST', headers, body: uploadForm([{ bytes: bytes as Uint8Array<ArrayBuffer> }], fields) })

/** The refused-uploads counts, by key. */
const refusedCounts = async (t: TestServer) =>
  Object.fromEntries(
    (
      await t.server.db
        .select({ key: uploadWindows.key, used: uploadWindows.used })
        .from(uploadWindows)
        .where(like(uploadWindows.key, 'refused:%'))
    ).map((r) => [r.key, r.used]),
  )
const imageRows = async (t: TestServer) => (await t.server.db.select({ n: count() }).from(images))[0].n

const TUS = { 'tus-resumable': '1.0.0' }
const tusCreate = (t: TestServer, path: string, length: number, headers: Record<string, string> = {}) =>
  t.fetch(path, { method: 'POST', headers: { ...TUS, ...headers, 'upload-length': String(length) } })
const tusPatch = (url: string, bytes: Uint8Array, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'PATCH',
    headers: { ...TUS, ...headers, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' },
    body: bytes as Uint8Array<ArrayBuffer>,
  })

const rawHead = (method: string, path: string, headers: Record<string, string>) =>
  `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`

const ENDLESS = 20 * 1024 * 1024

/** A request whose declared body is huge and arrives slowly (never, in practice): answered before it is read, or not at all. */
async function endlessBody(t: TestServer, method: string, path: string, headers: Record<string, string>) {
  const body = filler({ chunk: 1024, delayMs: 100 })
  const res = await rawRequest(
    t.server.port,
    rawHead(method, path, { ...headers, 'content-length': String(ENDLESS) }),
    body.stream,
  )
  return { ...res, sent: body.counter.sent }
}

const BOUNDARY = 'held-upload-boundary'
const encode = (text: string) => new TextEncoder().encode(text)

/** An upload of `bytes` whose body is sent up to its file's first bytes, then held open until `finish` or `abort`. */
function heldUpload(t: TestServer, bytes: Uint8Array, path: string, headers: Record<string, string> = {}) {
  let controller!: ReadableStreamDefaultController<Uint8Array>
  const body = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c
    },
  })
  const abort = new AbortController()
  const response = fetch(t.url + path, {
    method: 'POST',
    headers: { ...headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body,
    signal: abort.signal,
    duplex: 'half',
  } as RequestInit).then(
    (res) => res.status,
    () => 'aborted' as const,
  )
  controller.enqueue(
    encode(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="held.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
  )
  controller.enqueue(bytes.slice(0, 8))
  return {
    response,
    finish() {
      controller.enqueue(bytes.slice(8))
      controller.enqueue(encode(`\r\n--${BOUNDARY}--\r\n`))
      controller.close()
    },
    abort: () => abort.abort(),
  }
}

/** Waits until `n` uploads are being received (each has its temp file). */
async function receiving(t: TestServer, n: number) {
  const count = () =>
    readdirSync(join(t.dataDir, 'tmp')).filter((name) => name.startsWith('upload-') && !name.includes('.')).length
  for (let i = 0; i < 500 && count() !== n; i++) await Bun.sleep(20)
  expect(count()).toBe(n)
}

describe('refused uploads cost their sender', () => {
  test('a 3 KB SVG of nested <use> past its budget, and every file refused once processing began, count against the sender; earlier refusals do not', async () => {
    const { t } = await fresh({ MAX_IMAGE_PIXELS: '10000', ANON_MAX_FILE_SIZE: '100000' })
    const blocked = await image()
    await run(
      t.server.services.blocks.record(t.server.db, {
        sha256s: [new Bun.CryptoHasher('sha256').update(blocked).digest('hex')],
        reason: 'test',
        source: 'cli',
      }),
    )
    const png = await image()
    const refused: [string, Uint8Array, RegExp][] = [
      ['nested <use> SVG', new TextEncoder().encode(nestedUseSvg(6, 10, 100)), /SVG too complex/],
      ['not an image', notAnImage, /./],
      ['undecodable', png.slice(0, Math.floor(png.length / 2)), /./],
      ['over the pixel limit', await makeImage('png', 200, 100, 7), /megapixels/],
      ['blocked', blocked, /removed after an abuse report/],
    ]
    expect(new TextEncoder().encode(nestedUseSvg(6, 10, 100)).length).toBeLessThan(4096)
    for (const [name, bytes, message] of refused) {
      const res = await whileHealthy(t, () => post(t, '/api/upload', bytes))
      expect(`${name}: ${res.status}`).toBe(`${name}: 400`)
      expect(res.body.error).toMatch(message)
    }
    // A resumable upload that turns out not to be an image counts the same.
    const created = await tusCreate(t, '/api/tus', notAnImage.length)
    expect((await tusPatch(created.headers.get('location')!, notAnImage)).status).toBe(400)
    expect(await refusedCounts(t)).toEqual({ 'refused:ip:127.0.0.1': 6 })

    // Refused before any processing: not counted (a bad field, too many files, too large, no file).
    expect((await post(t, '/api/upload', await image(), {}, { visibility: 'sideways' })).status).toBe(400)
    const six = uploadForm(await Promise.all(Array.from({ length: 6 }, async () => ({ bytes: await image() }))))
    expect((await t.fetch('/api/upload', { method: 'POST', body: six })).status).toBe(400)
    expect((await post(t, '/api/upload', new Uint8Array(200_000))).status).toBe(413)
    expect((await t.fetch('/api/upload', { method: 'POST', body: new FormData() })).status).toBe(400)
    expect(await refusedCounts(t)).toEqual({ 'refused:ip:127.0.0.1': 6 })
    expect(await imageRows(t)).toBe(0)
  })

  test('past the limit every upload door answers 429 before reading the body; once the window ends, uploads are accepted again', async () => {
    const { t, calls, clock } = await fresh({ REFUSED_UPLOADS_PER_WINDOW: '2', REFUSED_UPLOADS_WINDOW_SECONDS: '120' })
    const windowStart = clock.now()
    const user = await userWithKey(t)
    const pending = (await tusCreate(t, '/api/tus', ENDLESS)).headers.get('location')!
    for (let i = 0; i < 2; i++) expect((await post(t, '/api/upload', notAnImage)).status).toBe(400)
    expect(calls.ingest).toBe(2)

    const multipart = { 'content-type': 'multipart/form-data; boundary=x' }
    for (const [door, res] of [
      ['anonymous', await endlessBody(t, 'POST', '/api/upload', multipart)],
      ['API key', await endlessBody(t, 'POST', '/api/v1/upload', { ...multipart, 'x-api-key': user.apiKey })],
      ['JWT', await endlessBody(t, 'POST', '/api/upload', { ...multipart, authorization: `Bearer ${user.token}` })],
      [
        'tus PATCH',
        await endlessBody(t, 'PATCH', new URL(pending).pathname, {
          ...TUS,
          'content-type': 'application/offset+octet-stream',
          'upload-offset': '0',
        }),
      ],
    ] as const) {
      expect(`${door}: ${res.status}`).toBe(`${door}: 429`)
      expect(JSON.parse(res.body).error).toContain('Too many refused uploads from this address')
      const h = expectRateLimitHeaders(res.headers, { retryAfter: true })
      // The configured window, all of it still to come: the clock stands still.
      expect(h).toMatchObject({ limit: 2, remaining: 0, retryAfter: 120 })
      // Answered before the body: a few KB of the 20 MB it declared.
      expect(res.sent).toBeLessThan(64 * 1024)
    }
    for (const path of ['/api/tus', '/api/v1/tus']) {
      const created = await tusCreate(t, path, 1000, path === '/api/v1/tus' ? { 'x-api-key': user.apiKey } : {})
      expect(`${path}: ${created.status}`).toBe(`${path}: 429`)
      expect(created.headers.get('retry-after')).toMatch(/^\d+$/)
    }
    expect(calls.ingest).toBe(2)

    // Its last millisecond: still refused. Its end: uploads are accepted again.
    clock.set(windowStart + 120_000 - 1)
    const last = await post(t, '/api/upload', await image())
    expect(last.status).toBe(429)
    expect(last.headers.get('retry-after')).toBe('1')
    clock.set(windowStart + 120_000)
    expect((await post(t, '/api/upload', await image())).status).toBe(201)
    expect((await post(t, '/api/v1/upload', await image(), user.keyHeader)).status).toBe(201)
  })

  test('per account across addresses, through the key and the session; admins are exempt', async () => {
    const { t } = await fresh({ TRUST_PROXY: 'true', REFUSED_UPLOADS_PER_WINDOW: '2' })
    const user = await userWithKey(t)
    expect(
      (await post(t, '/api/v1/upload', notAnImage, { ...user.keyHeader, 'x-forwarded-for': '198.51.100.1' })).status,
    ).toBe(400)
    expect(
      (await post(t, '/api/upload', notAnImage, { ...user.bearer, 'x-forwarded-for': '198.51.100.2' })).status,
    ).toBe(400)
    const third = await post(t, '/api/v1/upload', await image(), {
      ...user.keyHeader,
      'x-forwarded-for': '198.51.100.3',
    })
    expect(third.status).toBe(429)
    expect(third.body.error).toContain('Too many refused uploads from this account')
    const tus = await tusCreate(t, '/api/v1/tus', 1000, { ...user.keyHeader, 'x-forwarded-for': '198.51.100.4' })
    expect(tus.status).toBe(429)
    // The addresses themselves are one refusal each, under the limit: anyone else there uploads as usual.
    expect((await post(t, '/api/upload', await image(), { 'x-forwarded-for': '198.51.100.3' })).status).toBe(201)
    expect(await refusedCounts(t)).toEqual({
      [`refused:user:${user.user.id}`]: 2,
      'refused:ip:198.51.100.1': 1,
      'refused:ip:198.51.100.2': 1,
    })

    const admin = await userWithKey(t)
    await makeAdmin(t, admin.user.id)
    for (let i = 0; i < 3; i++)
      expect(
        (await post(t, '/api/v1/upload', notAnImage, { ...admin.keyHeader, 'x-forwarded-for': '198.51.100.9' })).status,
      ).toBe(400)
    expect(
      (await post(t, '/api/v1/upload', await image(), { ...admin.keyHeader, 'x-forwarded-for': '198.51.100.9' }))
        .status,
    ).toBe(201)
  })
})

describe('uploads in flight', () => {
  test('at most 4 per address: the 5th is 429 before its body is read; slots come back when uploads finish or are cut off', async () => {
    const { t } = await fresh()
    const user = await userWithKey(t)
    const held = await Promise.all(Array.from({ length: 4 }, async () => heldUpload(t, await image(), '/api/upload')))
    await receiving(t, 4)
    const fifth = await endlessBody(t, 'POST', '/api/upload', { 'content-type': 'multipart/form-data; boundary=x' })
    expect(fifth.status).toBe(429)
    expect(JSON.parse(fifth.body).error).toContain('Too many uploads at once')
    const h = expectRateLimitHeaders(fifth.headers, { retryAfter: true })
    expect(h).toMatchObject({ limit: 4, remaining: 0 })
    expect(fifth.sent).toBeLessThan(64 * 1024)
    // The address's cap holds for its accounts too.
    expect((await post(t, '/api/v1/upload', await image(), user.keyHeader)).status).toBe(429)

    held[0].abort()
    held[1].abort()
    held[2].finish()
    held[3].finish()
    expect(await Promise.all(held.map((h) => h.response))).toEqual(['aborted', 'aborted', 201, 201])
    await receiving(t, 0)
    // Every slot is free again: four more at once all pass.
    const next = await Promise.all(Array.from({ length: 4 }, async () => post(t, '/api/upload', await image())))
    expect(next.map((r) => r.status)).toEqual([201, 201, 201, 201])
  })

  test('at most N per account (UPLOADS_IN_FLIGHT_PER_ACCOUNT), across its key and session; other accounts and admins are not held back', async () => {
    const { t } = await fresh({ UPLOADS_IN_FLIGHT_PER_IP: '100', UPLOADS_IN_FLIGHT_PER_ACCOUNT: '2' })
    const user = await userWithKey(t)
    const other = await registerUser(t)
    const admin = await userWithKey(t)
    await makeAdmin(t, admin.user.id)
    const held = [
      heldUpload(t, await image(), '/api/v1/upload', user.keyHeader),
      heldUpload(t, await image(), '/api/upload', user.bearer),
    ]
    await receiving(t, 2)
    const third = await post(t, '/api/upload', await image(), user.bearer)
    expect(third.status).toBe(429)
    expect(third.body.error).toContain('per account')
    expect((await post(t, '/api/upload', await image(), other.bearer)).status).toBe(201)
    const admins = await Promise.all(
      Array.from({ length: 3 }, async () => heldUpload(t, await image(), '/api/v1/upload', admin.keyHeader)),
    )
    await receiving(t, 5)
    expect((await post(t, '/api/v1/upload', await image(), admin.keyHeader)).status).toBe(201)
    for (const h of [...held, ...admins]) h.finish()
    expect(await Promise.all([...held, ...admins].map((h) => h.response))).toEqual([201, 201, 201, 201, 201])
    expect((await post(t, '/api/v1/upload', await image(), user.keyHeader)).status).toBe(201)
  })
})

describe('window checks count uploads already admitted', () => {
  test('12 parallel anonymous uploads with 10 left: exactly 10 stored, 2 refused (429), and the refused never reach decoding', async () => {
    const { t, calls } = await fresh({ UPLOADS_IN_FLIGHT_PER_IP: '100' })
    const files = await Promise.all(Array.from({ length: 12 }, () => image()))
    const answers = await whileHealthy(t, () => Promise.all(files.map((bytes) => post(t, '/api/upload', bytes))))
    const statuses = answers.map((r) => r.status).sort()
    expect(statuses).toEqual([...Array(10).fill(201), 429, 429])
    for (const res of answers.filter((r) => r.status === 429)) expectRateLimitHeaders(res.headers, { retryAfter: true })
    expect(await imageRows(t)).toBe(10)
    expect(calls.ingest).toBe(10)
  })
})
