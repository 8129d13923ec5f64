/**
 * The SSRF-safe fetcher (src/net/fetch-url.ts) against a real HTTP server on 127.0.0.1. That address is private, so
 * fetches that must succeed run with allowPrivate; the refusals run without it, and those servers must see no request.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Invalid } from '../../src/errors'
import { type FetchOptions, fetchToFile, MAX_REDIRECTS } from '../../src/net/fetch-url'
import { type Bytes, chunkedBody, makeImage, stallingBodies } from '../fixtures'

let png: Bytes
let tmpDir: string
/** Requests the server saw, by path. */
const seen: string[] = []
/** The Host header of the last request. */
let lastHost = ''
/** Ends the streams that stall, once their test is over. */
const stalling = stallingBodies()
let server: ReturnType<typeof Bun.serve>
let declaring: Bun.TCPSocketListener
let base = ''

beforeAll(async () => {
  png = await makeImage('png', 30, 20)
  tmpDir = mkdtempSync(join(tmpdir(), 'fetch-url-'))
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch(request) {
      const url = new URL(request.url)
      seen.push(url.pathname)
      lastHost = request.headers.get('host') ?? ''
      const hops = /^\/hops\/(\d+)$/.exec(url.pathname)
      if (hops) {
        const left = Number(hops[1])
        return Response.redirect(left > 0 ? `/hops/${left - 1}` : '/pics/cat.png', 302)
      }
      switch (url.pathname) {
        case '/pics/cat.png':
          return new Response(png, { headers: { 'Content-Type': 'text/plain' } })
        case '/download':
          return new Response(png, {
            headers: { 'Content-Disposition': `attachment; filename="../holiday photo.png"` },
          })
        case '/download-utf8':
          return new Response(png, {
            headers: { 'Content-Disposition': `attachment; filename="x.png"; filename*=UTF-8''%C3%A9t%C3%A9.png` },
          })
        case '/redirect':
          return new Response(null, { status: 301, headers: { Location: url.searchParams.get('to') ?? '/' } })
        case '/big-chunked':
          // 10 kB with no Content-Length: only counting while streaming can tell.
          return new Response(chunkedBody(1000, 10))
        case '/stall-body':
          return new Response(stalling.body(png.slice(0, 10)), { headers: { 'Content-Length': String(png.length) } })
        case '/stall-headers':
          return new Promise<Response>(() => {})
        default:
          return new Response('no such picture', { status: 404 })
      }
    },
  })
  base = `http://127.0.0.1:${server.port}`
  // Bun.serve sends a streamed body chunked whatever its headers say: this one declares 5000 bytes, sends 10 and
  // waits, so only a refusal by the declared length answers before the time budget.
  declaring = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket) {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n0123456789')
      },
    },
  })
})

afterEach(() => {
  stalling.release()
  seen.length = 0
})

afterAll(() => {
  server.stop(true)
  declaring.stop(true)
  rmSync(tmpDir, { recursive: true, force: true })
})

const options = (extra: Partial<FetchOptions> = {}): FetchOptions => ({
  tmpDir,
  maxBytes: 1_000_000,
  timeoutMs: 5_000,
  allowPrivate: true,
  ...extra,
})

/** The fetch's refusal: an Invalid whose message is returned; no temp file is left. */
async function refusal(url: string, extra: Partial<FetchOptions> = {}): Promise<string> {
  const error = await fetchToFile(url, options(extra)).then(
    () => null,
    (e) => e,
  )
  expect(error).toBeInstanceOf(Invalid)
  expect(readdirSync(tmpDir)).toEqual([])
  return error.message
}

describe('fetching', () => {
  test('the body lands in a temp file with its size, hash and the name from the URL path (Content-Type not trusted)', async () => {
    const file = await fetchToFile(`${base}/pics/cat.png?size=large`, options())
    try {
      expect(file.filename).toBe('cat.png')
      expect(file.size).toBe(png.length)
      expect(file.sha256).toBe(new Bun.CryptoHasher('sha256').update(png).digest('hex'))
      expect(new Uint8Array(readFileSync(file.path))).toEqual(png)
      expect(file.path.startsWith(tmpDir)).toBe(true)
    } finally {
      rmSync(file.path)
    }
  })

  test('the name from Content-Disposition, as a name (never a path); filename* first', async () => {
    for (const [path, name] of [
      ['/download', 'holiday photo.png'],
      ['/download-utf8', 'été.png'],
    ]) {
      const file = await fetchToFile(`${base}${path}`, options())
      rmSync(file.path)
      expect(file.filename).toBe(name)
    }
  })

  test('the connection keeps the host name in the Host header (the address is pinned underneath)', async () => {
    const file = await fetchToFile(`http://localhost:${server.port}/pics/cat.png`, options())
    rmSync(file.path)
    expect(lastHost).toBe(`localhost:${server.port}`)
  })

  test(`${MAX_REDIRECTS} redirects are followed; one more is refused`, async () => {
    const file = await fetchToFile(`${base}/hops/${MAX_REDIRECTS - 1}`, options())
    rmSync(file.path)
    expect(file.filename).toBe('cat.png')
    seen.length = 0
    expect(await refusal(`${base}/hops/${MAX_REDIRECTS}`)).toContain(`more than ${MAX_REDIRECTS} redirects`)
    expect(seen).not.toContain('/pics/cat.png')
  })
})

describe('refusals say which failure', () => {
  test('an HTTP error status', async () => {
    expect(await refusal(`${base}/missing.png`)).toBe(`url ${base}/missing.png: the server answered HTTP 404`)
  })

  test('a declared length over the cap, before reading', async () => {
    expect(await refusal(`http://127.0.0.1:${declaring.port}/`, { maxBytes: 1000, timeoutMs: 60_000 })).toContain(
      'too large: at most 1000 bytes',
    )
  })

  test('an undeclared length over the cap, while streaming', async () => {
    expect(await refusal(`${base}/big-chunked`, { maxBytes: 2500 })).toContain('too large: at most 2.4 KB (2500 bytes)')
  })

  test('the time budget ends a body that stalls, and an answer that never comes', async () => {
    for (const path of ['/stall-body', '/stall-headers']) {
      expect(await refusal(`${base}${path}`, { timeoutMs: 300 })).toBe(
        `url ${base}${path}: no complete answer within 300 ms`,
      )
    }
  })

  test('schemes other than http and https, first or after a redirect', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/a.png', 'gopher://127.0.0.1/']) {
      expect(await refusal(url)).toContain('must be http or https (not ')
    }
    expect(await refusal(`${base}/redirect?to=file:///etc/passwd`)).toContain('must be http or https (not file:)')
    expect(await refusal('not a url')).toContain('must be an absolute http(s) URL')
  })

  test('a name that does not resolve, first or after a redirect (every hop is resolved and checked again)', async () => {
    expect(await refusal('http://no-such-host.invalid/a.png')).toContain('cannot resolve no-such-host.invalid')
    expect(await refusal(`${base}/redirect?to=http://no-such-host.invalid/a.png`)).toContain(
      'cannot resolve no-such-host.invalid',
    )
  })

  test('a port nobody listens on: the connection failure, without the address', async () => {
    const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const port = probe.port
    probe.stop(true)
    expect(await refusal(`http://localhost:${port}/a.png`)).toBe(
      `url http://localhost:${port}/a.png: cannot fetch (ECONNREFUSED)`,
    )
  })
})

describe('private addresses without allowPrivate (SSRF): refused before any connection', () => {
  const refused = [
    ['loopback', () => `${base}/pics/cat.png`],
    ['a name resolving to loopback', () => `http://localhost:${server.port}/pics/cat.png`],
    ['a redirect chain', () => `${base}/hops/1`],
    ['loopback in other notations (read as the URL parser reads them)', () => `http://0x7f.1:${server.port}/`],
    ['loopback as one number', () => `http://2130706433:${server.port}/`],
    ['IPv6 loopback', () => `http://[::1]:${server.port}/`],
    ['IPv4-mapped loopback', () => `http://[::ffff:127.0.0.1]:${server.port}/`],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
    ['cloud metadata (IPv6)', () => 'http://[fd00:ec2::254]/latest/meta-data/'],
    ['private', () => 'http://10.0.0.1/'],
    ['carrier-grade NAT', () => 'http://100.64.0.1/'],
    ['unspecified', () => `http://0.0.0.0:${server.port}/`],
    ['multicast', () => 'http://224.0.0.1/'],
  ] as const
  for (const [what, url] of refused) {
    test(what, async () => {
      const message = await refusal(url(), { allowPrivate: false })
      expect(message).toContain('is not allowed')
      // The address a name resolved to is never told.
      if (url().includes('localhost')) expect(message).not.toContain('127.0.0.1')
      expect(seen).toEqual([])
    })
  }
})
