import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { MAX_JSON_BYTES } from '../../src/http/body-limit'
import { eventually, type TestServer, userWithKey } from '../helpers'
import { chunkedFraming, dataSnapshot, filler, rawRequest, startServer, uploadImage } from './support'

// Small anonymous per-file limit, so the streamed cut-off is quick to reach; the account limits are the defaults.
const ANON_FILE = 2 * 1024 * 1024
/** MAX_FILE_SIZE's default (50 MB). */
const ACCOUNT_FILE = 50 * 1024 * 1024
let t: TestServer
let user: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer({ ANON_MAX_FILE_SIZE: String(ANON_FILE), GLOBAL_RATE_LIMIT: '100000' })
  user = await userWithKey(t)
  // One stored image, so "nothing changed" covers files as well as rows.
  await uploadImage(t, user.keyHeader)
})
afterAll(() => t.stop())

const GB10 = String(10 * 1024 * 1024 * 1024)
const BOUNDARY = '----security-test'
const filePartHead = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`
const head = (method: string, path: string, headers: Record<string, string>) =>
  `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`
const tmpFiles = () => readdirSync(join(t.dataDir, 'tmp')).length

describe('JSON bodies are capped', () => {
  const json = { 'content-type': 'application/json' }

  test('the snapshot sees the stored image (the file half of "nothing changed" is not vacuous)', async () => {
    const { counts, files } = await dataSnapshot(t)
    expect(counts.images).toBe(1)
    expect(files).toHaveLength(2)
  })

  test(`a declared Content-Length over ${MAX_JSON_BYTES} bytes: 413 from the declared length, before the body is read`, async () => {
    for (const [path, auth] of [
      ['/api/albums', { authorization: `Bearer ${user.token}` }],
      ['/api/auth/login', {}],
      ['/api/auth/register', {}],
    ] as const) {
      // 64 KB of the 64 MB declared, then nothing: only a refusal from the declared length can answer.
      const body = filler({ total: 64 * 1024, stall: true })
      const before = await dataSnapshot(t)
      const res = await rawRequest(
        t.server.port,
        head('POST', path, { ...json, ...auth, 'content-length': String(64 * 1024 * 1024) }),
        body.stream,
      )
      expect(res.status).toBe(413)
      expect(typeof JSON.parse(res.body).error).toBe('string')
      expect((await dataSnapshot(t)).hash).toBe(before.hash)
    }
  })

  test('a chunked body (no Content-Length) is cut off once it passes the cap: 413', async () => {
    for (const method of ['POST', 'PUT', 'PATCH']) {
      // One chunk past the cap, then nothing (and no end): only a server that stops at the cap can answer. Sending
      // nothing after that chunk also spares the answer the TCP reset a write after the server's close would draw.
      const body = filler({ prefix: '{"title":"', total: MAX_JSON_BYTES + 1, stall: true })
      const res = await rawRequest(
        t.server.port,
        head(method, method === 'POST' ? '/api/albums' : method === 'PUT' ? '/api/albums/abcdefgh' : '/api/account', {
          ...json,
          authorization: `Bearer ${user.token}`,
          'transfer-encoding': 'chunked',
        }),
        chunkedFraming(body.stream),
      )
      expect(res.status).toBe(413)
      expect(typeof JSON.parse(res.body).error).toBe('string')
    }
  })

  test('just under the cap is parsed normally (the cap is not a blanket refusal)', async () => {
    const text = JSON.stringify({ title: 'ok', description: null, padding: 'x'.repeat(MAX_JSON_BYTES - 100) })
    const res = await t.fetch('/api/albums', { method: 'POST', headers: { ...json, ...user.bearer }, body: text })
    expect(res.status).toBe(201)
  })

  test('deeply nested JSON is a 400, never a stack overflow (500)', async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
    const bodies = [
      deep(100_000),
      `{"title":${deep(100_000)}}`,
      `{"title":"x","extra":${deep(100_000)}}`,
      `{"title":"x","description":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`,
      `{"name":"x","title":${deep(5000)}}`,
    ]
    for (const [path, body] of bodies.flatMap(
      (b) =>
        [
          ['/api/albums', b],
          ['/api/embeds', b],
          ['/api/auth/login', b],
        ] as const,
    )) {
      const before = await dataSnapshot(t)
      const res = await t.fetch(path, { method: 'POST', headers: { ...json, ...user.bearer }, body })
      expect(`${path} ${res.status}`).toBe(`${path} 400`)
      expect(typeof (await res.json()).error).toBe('string')
      expect((await dataSnapshot(t)).hash).toBe(before.hash)
    }
  })

  test("values that break the framework's error text (an own toString or valueOf): 400, never a 500", async () => {
    const bodies = [
      '{"title":{"toString":"x"}}',
      '{"title":{"valueOf":"x","toString":1}}',
      '{"title":[{"toString":null}]}',
      '{"name":"n","color":{"toString":"#fff"}}',
    ]
    for (const [path, body] of bodies.flatMap(
      (b) =>
        [
          ['/api/albums', b],
          ['/api/embeds', b],
          ['/api/auth/login', b],
        ] as const,
    )) {
      const before = await dataSnapshot(t)
      const res = await t.fetch(path, { method: 'POST', headers: { ...json, ...user.bearer }, body })
      expect(`${path} ${body} ${res.status}`).toBe(`${path} ${body} 400`)
      expect(typeof (await res.json()).error).toBe('string')
      expect((await dataSnapshot(t)).hash).toBe(before.hash)
    }
  })

  test('malformed JSON and wrong content types: 400 with { error }', async () => {
    const cases: [string, string][] = [
      ['application/json', '{"title":'],
      ['application/json', "{'title':'x'}"],
      ['application/json', '\u0000'],
      ['application/json', '{"title":"x"}garbage'],
      ['text/plain', '{"title":"x"}'],
      ['application/x-www-form-urlencoded', 'title=x'],
      ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="title"\r\n\r\nx\r\n--x--\r\n'],
      ['application/xml', '<title>x</title>'],
    ]
    for (const [type, body] of cases) {
      const before = await dataSnapshot(t)
      const res = await t.fetch('/api/albums', {
        method: 'POST',
        headers: { 'content-type': type, ...user.bearer },
        body,
      })
      expect(`${type} ${JSON.stringify(body)} ${res.status}`).toBe(`${type} ${JSON.stringify(body)} 400`)
      expect(typeof (await res.json()).error).toBe('string')
      expect((await dataSnapshot(t)).hash).toBe(before.hash)
    }
  })
})

describe('multipart upload bodies are refused early', () => {
  // The declared length alone decides nothing (it cannot tell a file too large from one too many: see
  // test/images/upload.test.ts); the file is cut off where it passes the caller's per-file limit.
  test('a declared 10 GB body: 413 once its file passes the per-file limit, for every kind of caller, nothing left behind', async () => {
    const before = await dataSnapshot(t)
    const callers: [string, Record<string, string>, number][] = [
      ['/api/upload', {}, ANON_FILE],
      ['/api/upload', { authorization: `Bearer ${user.token}` }, ACCOUNT_FILE],
      ['/api/v1/upload', { 'x-api-key': user.apiKey }, ACCOUNT_FILE],
    ]
    for (const [path, auth, limit] of callers) {
      // Paced, so the 413 reaches the client between two writes (a write after the server has closed resets the connection).
      const body = filler({ prefix: filePartHead, chunk: 256 * 1024, delayMs: 1 })
      const res = await rawRequest(
        t.server.port,
        head('POST', path, {
          ...auth,
          'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
          'content-length': GB10,
        }),
        body.stream,
      )
      expect(`${path} ${res.status}`).toBe(`${path} 413`)
      expect(JSON.parse(res.body).error).toContain('too large')
      // Past the limit, not refused from the declared length; that it stops there (rather than after the 10 GB, which
      // would outlast the request's timeout) is shown to the byte by the stalled stream of the next test: how far an
      // endless writer gets before it sees the answer depends on the buffers between, not on the rule.
      expect(body.counter.sent).toBeGreaterThan(limit)
    }
    await Bun.sleep(100)
    expect(tmpFiles()).toBe(0)
    expect((await dataSnapshot(t)).hash).toBe(before.hash)
  })

  test('a chunked stream of endless file bytes is cut off at the per-file limit: 413, and nothing is left behind', async () => {
    const before = await dataSnapshot(t)
    // 1 MB past the per-file limit, then nothing (and no end): only a server that stops at the limit can answer. (Past
    // it by one 64 KB chunk is not enough: that much can wait in the buffers between the socket and the parser.)
    const body = filler({ prefix: filePartHead, total: ANON_FILE + 1024 * 1024, stall: true })
    const res = await rawRequest(
      t.server.port,
      head('POST', '/api/upload', {
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        'transfer-encoding': 'chunked',
      }),
      chunkedFraming(body.stream),
      30_000,
    )
    expect(res.status).toBe(413)
    expect(JSON.parse(res.body).error).toContain('too large')
    expect(body.counter.sent).toBeGreaterThan(ANON_FILE)
    // Its temp file goes once the request has ended.
    await eventually(() => tmpFiles() === 0, undefined, 'the temp file removed')
    expect((await dataSnapshot(t)).hash).toBe(before.hash)
  })

  test('the server is still healthy after all that', async () => {
    expect((await t.fetch('/healthz')).status).toBe(200)
    expect((await t.json('/api/v1/me', { headers: user.keyHeader })).status).toBe(200)
  })
})
