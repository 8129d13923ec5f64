import { expect } from 'bun:test'
import { connect } from 'node:net'
import { run } from '../../src/db/client'
import { images } from '../../src/db/schema'
import type { Media } from '../../src/media'
import type { Classifier } from '../../src/moderation'
import { insertPasskey } from '../../src/modules/auth/repository'
import type { ServerOverrides } from '../../src/server'
import { createMediaPool } from '../../src/workers/media-pool'
import { tableNames, tableRows } from '../db-dump'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { jsonBody, startTestServer, storedKeys, type TestServer, type userWithKey } from '../helpers'

/** The security suite never needs the real model: a classifier that finds everything neutral (and answers at once). */
export const neutralClassifier: Classifier = {
  classify: async () => ({ Porn: 0.01, Hentai: 0.01, Sexy: 0.01, Neutral: 0.95, Drawing: 0.02 }),
  warm: async () => {},
  close: async () => {},
  queueDepth: 0,
}

export const startServer = (env: Record<string, string> = {}, overrides: ServerOverrides = {}) =>
  startTestServer(env, { classifier: neutralClassifier, ...overrides })

// ---------------------------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client: fetch normalises paths (`%2e%2e`, `..`, backslashes) and cannot send a lying
// Content-Length or a slow body, which is exactly what these tests need to send.

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** Milliseconds from connecting to the complete response. */
  ms: number
}

function dechunk(buf: Buffer): Buffer {
  const out: Uint8Array[] = []
  let i = 0
  while (i < buf.length) {
    const eol = buf.indexOf('\r\n', i)
    if (eol < 0) break
    const size = parseInt(buf.subarray(i, eol).toString(), 16)
    if (!size) break
    out.push(buf.subarray(eol + 2, eol + 2 + size))
    i = eol + 2 + size + 2
  }
  return Buffer.concat(out)
}

/**
 * Sends `head` (request line and headers, ending in a blank line) and then `body`, which may be an endless async
 * iterable: sending stops as soon as the response is complete or the server closes the connection.
 */
export function rawRequest(
  port: number | undefined,
  head: string,
  body?: AsyncIterable<Uint8Array> | Uint8Array | string,
  timeoutMs = 15_000,
): Promise<RawResponse> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const socket = connect(port ?? 0, '127.0.0.1')
    const chunks: Uint8Array[] = []
    let done = false
    const finish = () => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      const all = Buffer.concat(chunks)
      const sep = all.indexOf('\r\n\r\n')
      if (sep < 0) return reject(new Error(`no HTTP response: ${JSON.stringify(all.toString().slice(0, 100))}`))
      const lines = all.subarray(0, sep).toString().split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':')
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      let rest: Buffer = all.subarray(sep + 4)
      if (headers['transfer-encoding'] === 'chunked') rest = dechunk(rest)
      else if (headers['content-length']) rest = rest.subarray(0, Number(headers['content-length']))
      resolve({
        status: Number(lines[0].split(' ')[1]),
        headers,
        body: rest.toString(),
        ms: performance.now() - started,
      })
    }
    const timer = setTimeout(() => {
      if (done) return
      done = true
      socket.destroy()
      reject(new Error(`raw request timed out after ${timeoutMs} ms: ${head.split('\r\n')[0]}`))
    }, timeoutMs)
    socket.on('data', (data: Buffer) => {
      chunks.push(data)
      const all = Buffer.concat(chunks)
      const sep = all.indexOf('\r\n\r\n')
      if (sep < 0) return
      const headText = all.subarray(0, sep).toString().toLowerCase()
      const length = /\r\ncontent-length:\s*(\d+)/.exec(headText)
      if (length && all.length - sep - 4 >= Number(length[1])) finish()
      else if (/\r\ntransfer-encoding:\s*chunked/.test(headText) && all.subarray(sep).includes('\r\n0\r\n\r\n'))
        finish()
      else if (!length && !headText.includes('transfer-encoding') && /^http\/1\.1 (204|304)/.test(headText)) finish()
    })
    socket.on('close', finish)
    socket.on('error', () => {
      if (chunks.length) return finish()
      if (done) return
      done = true
      clearTimeout(timer)
      reject(new Error('connection failed'))
    })
    socket.on('connect', async () => {
      socket.write(head)
      if (body === undefined) return
      if (typeof body === 'string' || body instanceof Uint8Array) return void socket.write(body)
      try {
        for await (const chunk of body) {
          if (done || socket.destroyed) break
          if (!socket.write(chunk)) await new Promise((r) => socket.once('drain', r))
        }
      } catch {
        // The server closed the connection while we were still sending: that is what some tests want.
      }
    })
  })
}

/** A GET (or other bodiless) request for an exact request target, bytes as given. */
export const rawGet = (
  port: number | undefined,
  target: string,
  headers: Record<string, string> = {},
  method = 'GET',
) =>
  rawRequest(
    port,
    `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`,
  )

/** Wraps a byte stream in HTTP/1.1 chunked framing. */
export async function* chunkedFraming(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder()
  for await (const chunk of source) {
    yield encoder.encode(`${chunk.length.toString(16)}\r\n`)
    yield chunk
    yield encoder.encode('\r\n')
  }
  yield encoder.encode('0\r\n\r\n')
}

/**
 * An endless (or `total`-byte) stream of filler, `chunk` bytes every `delayMs`; `sent` counts what was produced.
 * `stall`: after `total` bytes the stream sends nothing more and never ends, like a client that stopped sending: a
 * server that waited for the rest would never answer, so an answer proves it decided from what it had (no timing).
 */
export function filler(
  opts: { chunk?: number; delayMs?: number; total?: number; prefix?: string; stall?: boolean } = {},
) {
  const counter = { sent: 0 }
  const chunkSize = opts.chunk ?? 64 * 1024
  async function* stream() {
    if (opts.prefix) {
      const prefix = new TextEncoder().encode(opts.prefix)
      counter.sent += prefix.length
      yield prefix
    }
    const chunk = new Uint8Array(chunkSize).fill(0x61)
    while (counter.sent < (opts.total ?? Infinity)) {
      counter.sent += chunk.length
      yield chunk
      if (opts.delayMs) await Bun.sleep(opts.delayMs)
    }
    if (opts.stall) await new Promise(() => {})
  }
  return { stream: stream(), counter }
}

// ---------------------------------------------------------------------------------------------------------------
// Data snapshots: "nothing changed" is a hash of every row of every table and of every stored file.

/** Columns that change on reads by design (a key's or a session's last use) and say nothing about the data. */
const VOLATILE_COLUMNS: Record<string, string[]> = { api_keys: ['last_used_at'], sessions: ['last_used_at'] }

/**
 * The counters a refusal is meant to change (see Attempts and abuse limits in docs/security.md): refused uploads and failed
 * password attempts, and on PostgreSQL the global per-IP counts every request adds to (`api:`, shared by instances).
 * The upload windows themselves (`ip:`, `user:`) and the report windows stay in the snapshot.
 */
const ATTEMPT_COUNTERS = /^(refused|login|login-account|login-ip|album-password|album-password-ip|api):/

export interface DataSnapshot {
  /** Rows per table. */
  counts: Record<string, number>
  /** Every stored file as `<key> <size>` (see storedFiles). */
  files: string[]
  hash: string
}

/**
 * Every row of every table and every stored file (through the server's storage, so local disk and bucket alike).
 * Throws when an image row has no stored original: then the file half would hash nothing and prove nothing.
 */
export async function dataSnapshot(t: TestServer): Promise<DataSnapshot> {
  const tables = await tableNames(t.server.db)
  const counts: Record<string, number> = {}
  const hasher = new Bun.CryptoHasher('sha256')
  for (const table of tables) {
    const rows = (await tableRows(t.server.db, table)).filter(
      (row) => table !== 'upload_windows' || !ATTEMPT_COUNTERS.test(String(row.key)),
    )
    counts[table] = rows.length
    const skip = VOLATILE_COLUMNS[table] ?? []
    const lines = rows
      .map((row) =>
        JSON.stringify(
          Object.entries(row).filter(([k]) => !skip.includes(k)),
          (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : typeof v === 'bigint' ? String(v) : v),
        ),
      )
      .sort()
    hasher.update(`${table}\n${lines.join('\n')}\n`)
  }
  const files = await storedFiles(t)
  const keys = new Set(files.map((f) => f.slice(0, f.indexOf(' '))))
  for (const { id, ext } of await t.server.db.select({ id: images.id, ext: images.ext }).from(images)) {
    if (!keys.has(`originals/${id}.${ext}`))
      throw new Error(`snapshot: image ${id} has no stored original among ${files.length} stored files`)
  }
  for (const file of files) hasher.update(`file ${file}\n`)
  return { counts, files, hash: hasher.digest('hex') }
}

/** Every stored file (original or thumbnail) as `<key> <size>`, listed and sized through the server's storage. */
export async function storedFiles(t: TestServer): Promise<string[]> {
  const storage = t.server.deps.storage
  const keys = await storedKeys(t)
  const sizes = await Promise.all(keys.map(async (key) => (await storage.stat(key))?.size ?? 'gone'))
  return keys.map((key, i) => `${key} ${sizes[i]}`)
}

// ---------------------------------------------------------------------------------------------------------------
// Accounts and content.

let seed = 1000

export async function uploadWith(
  t: TestServer,
  headers: Record<string, string>,
  fields: Record<string, string> = {},
  parts?: UploadPart[],
  path = '/api/v1/upload',
) {
  const files = parts ?? [{ bytes: await makeImage('png', 32, 24, ++seed), name: `pic-${seed}.png` }]
  return t.json(path, { method: 'POST', headers, body: uploadForm(files, fields) })
}

/** Uploads one image with an API key and returns its answer (201 asserted). */
export async function uploadImage(
  t: TestServer,
  keyHeader: Record<string, string>,
  fields: Record<string, string> = {},
  part?: UploadPart,
) {
  const res = await uploadWith(t, keyHeader, fields, part ? [part] : undefined)
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as {
    id: string
    url: string
    thumbnail: string
    viewer: string
    filename: string
    deleteToken?: string
  }
}

export const send = (method: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  ...jsonBody(body, headers),
})

/** Asserts the `{ error: string }` body of an error answer, with the given status (or any 4xx). */
export function expectError(res: { status: number; body: any }, status?: number) {
  if (status === undefined) {
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(res.status).toBeLessThan(500)
  } else expect(res.status).toBe(status)
  expect(typeof res.body?.error).toBe('string')
}

/** The three RateLimit headers and Retry-After of a 429, each a whole number. */
export function expectRateLimitHeaders(headers: Headers | Record<string, string>, opts: { retryAfter: boolean }) {
  const get = (name: string) => (headers instanceof Headers ? headers.get(name) : headers[name.toLowerCase()]) ?? null
  const names = [
    'RateLimit-Limit',
    'RateLimit-Remaining',
    'RateLimit-Reset',
    ...(opts.retryAfter ? ['Retry-After'] : []),
  ]
  for (const name of names) {
    const value = get(name)
    expect(value, name).toMatch(/^\d+$/)
  }
  return {
    limit: Number(get('RateLimit-Limit')),
    remaining: Number(get('RateLimit-Remaining')),
    reset: Number(get('RateLimit-Reset')),
    retryAfter: opts.retryAfter ? Number(get('Retry-After')) : undefined,
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One of every resource an account can own, for the cross-account matrix and the property-based suite.

export type Resources = Record<string, string>

/**
 * Creates, for `who`, a private image (in an album, with an embed profile), a second API key, a webhook and two tus
 * uploads; `tag` marks every name, so a test can look for it in what another account sees.
 */
export async function ownEverything(
  t: TestServer,
  who: Awaited<ReturnType<typeof userWithKey>>,
  tag: string,
): Promise<Resources> {
  const own: Resources = {}
  const image = await uploadImage(
    t,
    who.keyHeader,
    { visibility: 'private' },
    { bytes: await makeImage('png', 24, 24, ++seed), name: `${tag}-secret-file.png` },
  )
  own.image = image.id
  own.album = (
    await t.json('/api/albums', send('POST', { title: `${tag}-secret-album`, description: 'private' }, who.bearer))
  ).body.album.id
  expect(
    (await t.json(`/api/albums/${own.album}/images`, send('POST', { imageId: image.id }, who.bearer))).status,
  ).toBe(200)
  own.profile = String(
    (await t.json('/api/embeds', send('POST', { name: `${tag}-secret-profile`, title: 'x' }, who.bearer))).body.profile
      .id,
  )
  expect(
    (
      await t.json(
        `/api/images/${image.id}/embed`,
        send('PATCH', { embed_profile_id: Number(own.profile) }, who.bearer),
      )
    ).status,
  ).toBe(200)
  own.key = String((await t.json('/api/keys', send('POST', { name: `${tag}-secret-key` }, who.bearer))).body.key.id)
  own.user = String(who.user.id)
  own.username = who.user.username
  own.session = JSON.parse(Buffer.from(who.token.split('.')[1], 'base64url').toString()).sid
  // A passkey's row, stored as registration stores it (the matrix checks who may touch it, not the WebAuthn ceremony,
  // which test/auth/passkeys.test.ts runs in a browser).
  own.passkey = String(
    (
      await insertPasskey(t.server.db, {
        userId: who.user.id,
        credentialId: `${tag}-credential-${++seed}`,
        publicKey: Buffer.from(crypto.getRandomValues(new Uint8Array(77))),
        name: `${tag}-secret-passkey`,
      })
    ).id,
  )
  // An address literal (there is no DNS here), and an event nobody triggers, so nothing is ever delivered.
  const hook = await t.json(
    '/api/webhooks',
    send('POST', { url: `https://8.8.8.8/${tag}-secret-hook`, events: ['image.deleted'] }, who.bearer),
  )
  if (hook.status === 201 || hook.status === 200) own.webhook = String(hook.body.webhook?.id ?? hook.body.id)
  for (const [path, auth] of [
    ['/api/v1/tus', who.keyHeader],
    ['/api/tus', who.bearer],
  ] as const) {
    const res = await t.fetch(path, {
      method: 'POST',
      headers: { ...auth, 'tus-resumable': '1.0.0', 'upload-length': '1000' },
    })
    if (res.status === 201)
      own[path === '/api/v1/tus' ? 'tusKey' : 'tusWeb'] = res.headers.get('location')!.split('/').pop()!
  }
  // A report on the image, so the admin report routes have a real id.
  const report = await t.json('/api/reports', send('POST', { imageId: image.id, reason: 'spam' }))
  if (report.status === 201) own.report = String(report.body.report.id)
  // A block (only admins make them, so made here directly; no hash: it blocks nothing), for the admin block routes.
  own.block = String(
    await run(t.server.services.blocks.record(t.server.db, { sha256s: [], reason: `${tag}-block`, source: 'cli' })),
  )
  return own
}

/** The owner's value for a path parameter of a route (undefined: a route this table does not know yet). */
export function resourceFor(own: Resources, path: string, param: string): string | undefined {
  if (path.startsWith('/api/albums/')) return param === 'imageId' ? own.image : own.album
  if (path.startsWith('/api/embeds/')) return own.profile
  if (path.startsWith('/api/keys/')) return own.key
  if (path.startsWith('/api/webhooks/')) return own.webhook
  if (path.startsWith('/api/v1/tus/')) return own.tusKey
  if (path.startsWith('/api/tus/')) return own.tusWeb
  if (path.startsWith('/api/admin/users/')) return own.user
  if (path.startsWith('/api/account/sessions/')) return own.session
  if (path.startsWith('/api/auth/passkeys/')) return own.passkey
  // Invites are the admins' (not an account's): any id stands for one, since only the 403 is checked.
  if (path.startsWith('/api/admin/invites/')) return own.user
  if (path.startsWith('/api/admin/reports/')) return own.report
  if (path.startsWith('/api/admin/blocks/')) return own.block
  if (path.startsWith('/api/users/')) return own.username
  if (path.startsWith('/api/admin/images/') || path.startsWith('/api/v1/image/') || path.startsWith('/api/images/'))
    return own.image
  return undefined
}

/**
 * The real media jobs (a pool of worker processes, `timeoutMs` each) with each upload's job counted, so a test can
 * tell whether a refused upload ever reached decoding.
 */
export function countingMedia(opts: { maxPixels?: number; timeoutMs?: number } = {}) {
  const real = createMediaPool({
    maxPixels: opts.maxPixels ?? 100_000_000,
    maxDecodeBytes: 512 * 2 ** 20,
    stripMetadata: 'gps',
    workers: 2,
    timeoutMs: opts.timeoutMs ?? 20_000,
    memoryBytes: 2 ** 30,
    maxQueue: 64,
  })
  const calls = { ingest: 0 }
  const media: Media = {
    ...real,
    ingest(path, jobOptions) {
      calls.ingest++
      return real.ingest(path, jobOptions)
    },
  }
  return { media, calls }
}
