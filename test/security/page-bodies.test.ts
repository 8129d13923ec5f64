import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { MAX_PAGE_BODY_BYTES } from '../../src/http/body-limit'
import { registerUser, type TestServer, whileHealthy } from '../helpers'
import { chunkedFraming, filler, rawRequest, send, startServer } from './support'

let t: TestServer
let albumId: string
const PASSWORD = 'correct album password'

beforeAll(async () => {
  t = await startServer()
  const owner = await registerUser(t)
  albumId = (await t.json('/api/albums', send('POST', { title: 'Bodies', isPublic: true }, owner.bearer))).body.album.id
  expect((await t.json(`/api/albums/${albumId}`, send('PUT', { password: PASSWORD }, owner.bearer))).status).toBe(200)
})
afterAll(() => t.stop())

const MB = 1024 * 1024
const head = (method: string, path: string, headers: Record<string, string>, close = true) =>
  `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${close ? 'Connection: close\r\n' : ''}${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`

/**
 * Sends a whole `total`-byte text/plain body (chunked or with its Content-Length) whatever the server answers, until
 * the server closes the connection; resolves with the status line and the bytes sent.
 */
function streamWhole(path: string, total: number, chunked: boolean) {
  return new Promise<{ status: number; body: string; sent: number }>((resolve) => {
    const socket = connect(t.server.port!, '127.0.0.1')
    let sent = 0
    let response = ''
    let closed = false
    socket.on('data', (data) => (response += data.toString()))
    socket.on('error', () => {})
    socket.on('close', () => {
      closed = true
      resolve({ status: Number(response.split(' ')[1]), body: response.slice(response.indexOf('\r\n\r\n') + 4), sent })
    })
    socket.on('connect', async () => {
      // A keep-alive connection: the server has to get past the whole body to read the next request.
      socket.write(
        head(
          'POST',
          path,
          {
            'content-type': 'text/plain',
            ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(total) }),
          },
          false,
        ),
      )
      const chunk = Buffer.alloc(256 * 1024, 0x61)
      const framed = chunked
        ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
        : chunk
      while (sent < total && !closed) {
        sent += chunk.length
        if (!socket.write(framed)) await new Promise((r) => socket.once('drain', r))
      }
      if (!closed) socket.end(chunked ? '0\r\n\r\n' : '')
      // Whether the server closes or keeps the connection, nothing is left to wait for.
      setTimeout(() => socket.destroy(), 500)
    })
  })
}

/** The highest RSS of this process (the test server runs in it) while `work` runs, above what it was before. */
async function peakRssGrowth(work: () => Promise<unknown>) {
  Bun.gc(true)
  const before = process.memoryUsage().rss
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5)
  try {
    await work()
  } finally {
    clearInterval(sampler)
  }
  return Math.max(peak, process.memoryUsage().rss) - before
}

describe('bodies outside /api are bounded before they are read', () => {
  test('200 MB of text/plain streamed to /a/xxxxxxxx (chunked, and with its length): 413, and RSS does not grow with the body', async () => {
    for (const chunked of [true, false]) {
      let answer: Awaited<ReturnType<typeof streamWhole>> | undefined
      const growth = await peakRssGrowth(() =>
        whileHealthy(t, async () => (answer = await streamWhole('/a/xxxxxxxx', 200 * MB, chunked))),
      )
      // Reading the body whole cost over 300 MB here; refusing it costs a few.
      expect(growth).toBeLessThan(40 * MB)
      expect(answer!.status).toBe(413)
      expect(JSON.parse(answer!.body).error).toContain(`at most 16 KB (${MAX_PAGE_BODY_BYTES} bytes)`)
    }
  }, 60_000)

  test('a declared body over the cap: 413 at once, on page routes and unknown paths, before any of it is read', async () => {
    for (const [method, path] of [
      ['POST', `/a/${'x'.repeat(8)}`],
      ['POST', '/'],
      ['GET', '/gallery'],
      ['POST', '/no/such/page'],
      ['PUT', '/i/abcdefgh'],
    ]) {
      // A body that would take forever to send: the answer comes before it is read.
      const body = filler({ chunk: 1024, delayMs: 200 })
      const res = await rawRequest(
        t.server.port,
        head(method, path, { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(200 * MB) }),
        body.stream,
      )
      expect(`${method} ${path} ${res.status}`).toBe(`${method} ${path} 413`)
      expect(typeof JSON.parse(res.body).error).toBe('string')
      expect(body.counter.sent).toBeLessThan(64 * 1024)
    }
  })

  test('a chunked form is cut off once it passes the cap: 413', async () => {
    // One chunk past the cap, then nothing (and no end): only a server that stops at the cap can answer.
    const body = filler({ prefix: 'password=', chunk: 4096, total: MAX_PAGE_BODY_BYTES + 1, stall: true })
    const res = await rawRequest(
      t.server.port,
      head('POST', `/a/${albumId}`, {
        'content-type': 'application/x-www-form-urlencoded',
        'transfer-encoding': 'chunked',
      }),
      chunkedFraming(body.stream),
    )
    expect(res.status).toBe(413)
    expect(body.counter.sent).toBeGreaterThan(MAX_PAGE_BODY_BYTES)
  })

  test('the album password form still works, urlencoded or multipart, just under the cap too', async () => {
    const form = (password: string, padding = '') => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ password, padding }).toString(),
    })
    const opened = await t.fetch(`/a/${albumId}`, form(PASSWORD))
    expect(opened.status).toBe(200)
    expect(await opened.text()).toContain('<h1>Bodies</h1>')
    const padded = await t.fetch(`/a/${albumId}`, form(PASSWORD, 'p'.repeat(MAX_PAGE_BODY_BYTES - 100)))
    expect(padded.status).toBe(200)
    const multipart = new FormData()
    multipart.append('password', PASSWORD)
    const viaMultipart = await t.fetch(`/a/${albumId}`, { method: 'POST', body: multipart })
    expect(viaMultipart.status).toBe(200)
    expect(await viaMultipart.text()).toContain('<h1>Bodies</h1>')
    expect((await t.fetch(`/a/${albumId}`, form('not it'))).status).toBe(403)
  })
})
