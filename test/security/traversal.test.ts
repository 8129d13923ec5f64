import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Logger, NoopLogger } from 'drizzle-orm/logger'
import { engine } from '../../src/db/engine'
import { HOUR_MS } from '../../src/lib/time'
import { makeImage, svgImage } from '../fixtures'
import { makeAdmin, type TestServer, userWithKey } from '../helpers'
import { type RawResponse, rawGet, rawRequest, send, startServer, uploadImage } from './support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let image: Awaited<ReturnType<typeof uploadImage>>
let svg: Awaited<ReturnType<typeof uploadImage>>
let album: { id: string }
const SENTINEL = `sentinel-${crypto.randomUUID()}`

beforeAll(async () => {
  if (engine === 'pg') spyOnPg()
  else spyOnDatabase()
  // The spy records every statement while a request runs: background work that queries on a timer (the expiry sweep,
  // rescans) waits an hour here; the 2 s flushes are left out by their statements (FLUSHES).
  t = await startServer(
    { GLOBAL_RATE_LIMIT: '100000' },
    { expirySweep: { intervalMs: HOUR_MS }, rescan: { intervalMs: HOUR_MS } },
  )
  owner = await userWithKey(t)
  await makeAdmin(t, owner.user.id) // so the admin routes reach their handlers too
  image = await uploadImage(t, owner.keyHeader, {}, { bytes: await makeImage('png', 20, 20, 3), name: 'x.png' })
  svg = await uploadImage(t, owner.keyHeader, {}, { bytes: svgImage(), name: 'x.svg' })
  album = (await t.json('/api/albums', send('POST', { title: 'traversal', isPublic: true }, owner.bearer))).body.album
  // Files a traversal would love to reach: one in the data directory, beside the database and the image files.
  writeFileSync(join(t.dataDir, 'secret.txt'), SENTINEL)
  // (With STORAGE=s3 there is no `files` folder: make one, so the bait is there all the same.)
  mkdirSync(join(t.dataDir, 'files'), { recursive: true })
  writeFileSync(join(t.dataDir, 'files', 'secret.txt'), SENTINEL)
})
afterAll(async () => {
  await t.stop()
  restoreDatabase()
})

/** Raw path segments: plain, encoded, double-encoded, overlong UTF-8, backslashes, NUL, and broken escapes. */
function payloads(): string[] {
  return [
    '..',
    '../..',
    '../../secret.txt',
    '..%2f..%2fsecret.txt',
    '..%2F..%2Fimghost.sqlite',
    '%2e%2e',
    '%2e%2e%2f%2e%2e%2fsecret.txt',
    '%2E%2E/%2E%2E/secret.txt',
    '.%2e/.%2e/secret.txt',
    '..%252f..%252fsecret.txt',
    '%252e%252e%252fsecret.txt',
    '..\\..\\secret.txt',
    '..%5c..%5csecret.txt',
    '..%255c..%255csecret.txt',
    '%c0%ae%c0%ae%c0%afsecret.txt',
    '%e0%80%ae%e0%80%ae/secret.txt',
    '....//....//secret.txt',
    '%00',
    '..%00',
    'secret.txt%00.png',
    `${image.id}.png%00.svg`,
    `${image.id}.png%00`,
    `${image.id}%00`,
    `${image.id}%2f..%2f..%2fsecret.txt`,
    `${image.id}.png%2f..%2f..%2fsecret.txt`,
    `${image.id}/../../secret.txt`,
    `..%2foriginals%2f${image.id}.png`,
    '%2fetc%2fpasswd',
    '..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd',
    'files%2fsecret.txt',
    '%',
    '%zz',
    '%ff%fe',
    '%ed%a0%80',
    'a'.repeat(5000),
    '%e2%80%ae',
    '1%20OR%201=1',
    "'%20OR%20'1'='1",
    '-1',
    '0',
    '1e3',
    '0x10',
    '99999999999999999999999',
    'NaN',
    'Infinity',
  ]
}

/**
 * Where a server that resolves literal `.` and `..` segments (RFC 3986, as Bun does) routes a target. Such a payload
 * leaves its position and names another route (`/cdn/../..` is `/`), which is not a traversal: only what stays
 * inside the prefix must be refused.
 */
function resolvedPath(target: string): string {
  const out: string[] = []
  for (const segment of target.split('?')[0].split('/')) {
    if (segment === '..') out.pop()
    else if (segment !== '.') out.push(segment)
  }
  return out.join('/') || '/'
}
const staysIn = (prefix: string, target: string) => resolvedPath(target).startsWith(prefix)

/** What must never appear in an answer: our sentinel, the SQLite file, /etc/passwd, a stack trace or a server path. */
function expectNoLeak(res: RawResponse, what: string) {
  expect(res.status, `${what} answered ${res.status}: ${res.body.slice(0, 200)}`).toBeLessThan(500)
  expect(res.body).not.toContain(SENTINEL)
  expect(res.body).not.toContain('SQLite format 3')
  expect(res.body).not.toMatch(/root:.*:0:0:/)
  expect(res.body).not.toContain(t.dataDir)
  expect(res.body).not.toMatch(/\bat .*\.(ts|js):\d+/)
}

/**
 * Records every value bound to an SQL statement while `recording` is on, to prove a bad id never reaches a query.
 * Installed on the Database prototype before the server starts, so statements prepared at startup are seen too.
 */
const bound: unknown[] = []
/** The SQL text of every statement run while `recording` is on. */
const statements: string[] = []
let recording = false
/**
 * The periodic flushes of buffered view counts and API key and session uses (src/server.ts, every 2 s): a timer's
 * writes, whichever request they happen to fall into on a loaded machine, so they are not the request's statements.
 */
const FLUSHES = [
  'UPDATE images SET views = views + ?1 WHERE id = ?2',
  'update "api_keys" set "last_used_at" = ?',
  'update "sessions" set "last_used_at" = ?',
]
const originals = { prepare: Database.prototype.prepare, query: Database.prototype.query }
function spyOnDatabase() {
  for (const method of ['prepare', 'query'] as const) {
    const original = originals[method] as unknown as (this: Database, ...args: unknown[]) => Record<string, unknown>
    ;(Database.prototype as unknown as Record<string, unknown>)[method] = function (
      this: Database,
      ...args: unknown[]
    ) {
      const statement = original.apply(this, args)
      for (const name of ['all', 'get', 'run', 'values', 'iterate']) {
        const run = statement[name] as ((...a: unknown[]) => unknown) | undefined
        if (typeof run !== 'function') continue
        statement[name] = (...params: unknown[]) => {
          if (recording && !FLUSHES.some((flush) => String(args[0]).startsWith(flush))) {
            bound.push(...params.flatMap((p) => (p && typeof p === 'object' ? Object.values(p) : [p])))
            statements.push(String(args[0]))
          }
          return run.apply(statement, params)
        }
      }
      return statement
    }
  }
}
/**
 * PostgreSQL's queries go through drizzle's bun-sql session, which logs every one (statement and bound values) to a
 * NoopLogger before it runs, transactions' own sessions included: the spy takes that method instead.
 */
const FLUSHES_PG = [
  'UPDATE images SET views = images.views + v.n',
  'update "api_keys" set "last_used_at" = $1',
  'update "sessions" set "last_used_at" = $1',
  // The per-IP counts of every instance added up (src/http/rate-limit.ts `sync`), on a 250 ms timer.
  'INSERT INTO upload_windows (key, window_start, used)',
  // The first statement of every transaction (src/db/client.ts), those timers' too; it binds only the lock's constant,
  // and what a request's own transaction runs after it is still recorded.
  'SELECT pg_advisory_xact_lock',
]
const noopLogQuery = NoopLogger.prototype.logQuery
function spyOnPg() {
  ;(NoopLogger.prototype as unknown as Logger).logQuery = (query: string, params: unknown[]) => {
    if (recording && !FLUSHES_PG.some((flush) => query.trim().startsWith(flush))) {
      bound.push(...params.flatMap((p) => (p && typeof p === 'object' ? Object.values(p) : [p])))
      statements.push(query)
    }
  }
}
const restoreDatabase = () => {
  Object.assign(Database.prototype, originals)
  NoopLogger.prototype.logQuery = noopLogQuery
}

describe('path traversal and malformed ids', () => {
  test('pages and files (/cdn, /cdn/medium, /i, /a, /u, /assets): never a file outside, never a 5xx', async () => {
    for (const prefix of ['/cdn/', '/cdn/medium/', '/i/', '/a/', '/u/', '/assets/']) {
      for (const payload of payloads()) {
        for (const method of ['GET', 'HEAD']) {
          const res = await rawGet(t.server.port, prefix + payload, {}, method)
          expectNoLeak(res, `${method} ${prefix}${payload}`)
          // Nothing here names an existing file, so nothing is served.
          if (staysIn(prefix, prefix + payload))
            expect(res.status, `${method} ${prefix}${payload}`).toBeGreaterThanOrEqual(400)
        }
      }
    }
    // The real files are still served, so the guard is not simply refusing everything.
    expect((await rawGet(t.server.port, `/cdn/${image.id}.png`)).status).toBe(200)
    expect((await rawGet(t.server.port, `/cdn/medium/${image.id}.webp`)).status).toBe(200)
  })

  test('every `:param` API route of /swagger/json, with every method it has: 4xx with { error }, never a 5xx', async () => {
    const doc = (await t.json('/swagger/json')).body
    const routes = Object.entries<Record<string, unknown>>(doc.paths).filter(([path]) => path.includes('{'))
    expect(routes.length).toBeGreaterThanOrEqual(8)
    const auth = { authorization: `Bearer ${owner.token}`, 'x-api-key': owner.apiKey, 'x-delete-token': 'x' }
    let checked = 0
    for (const [path, operations] of routes) {
      for (const method of Object.keys(operations)) {
        for (const payload of payloads()) {
          const target = path.replace(/\{[^}]+\}/g, payload)
          // A syntactically valid body, so only the path can be what is wrong.
          const body =
            '{"title":"t","visibility":"private","nsfw":true,"embed_profile_id":null,"imageId":"abcdefgh","banned":true}'
          const answer =
            method === 'get' || method === 'delete' || method === 'head'
              ? await rawGet(t.server.port, target, auth, method.toUpperCase())
              : await rawBody(method.toUpperCase(), target, { ...auth, 'content-type': 'application/json' }, body)
          expect(answer).not.toBeNull()
          expectNoLeak(answer!, `${method.toUpperCase()} ${target}`)
          if (!staysIn(path.slice(0, path.indexOf('{')), target)) continue
          expect(
            answer!.status,
            `${method.toUpperCase()} ${target}: ${answer!.body.slice(0, 120)}`,
          ).toBeGreaterThanOrEqual(400)
          if (method !== 'head' && answer!.headers['content-type']?.includes('json'))
            expect(typeof JSON.parse(answer!.body).error).toBe('string')
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(300)
    // Nothing was changed by all that: the image, the SVG and the album are all still there.
    for (const id of [image.id, svg.id]) expect((await t.json(`/api/v1/image/${id}`)).status).toBe(200)
    expect((await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })).status).toBe(200)
  })

  test('malformed ids are refused before any database lookup', async () => {
    // The spy works: a well-formed id is looked up, and seen. (One no image has: an image read before may be answered
    // from memory, src/modules/images/live-cache.ts.)
    recording = true
    expect((await rawGet(t.server.port, '/api/v1/image/Unknown1')).status).toBe(404)
    recording = false
    expect(bound).toContain('Unknown1')
    const malformed = [
      '..',
      '../x',
      'a/b',
      'a\\b',
      'abc\u0000def',
      '%zz',
      'x'.repeat(300),
      "a' OR '1'='1",
      'abcdefg',
      'abcdefghi',
      'abcd-efg',
    ]
    const targets = (id: string) => {
      // Dots encoded too: the id must stay one path segment (a server that resolves `..` would route elsewhere).
      const e = encodeURIComponent(id).replace(/\./g, '%2E')
      return [
        ['GET', `/api/v1/image/${e}`],
        ['PATCH', `/api/v1/image/${e}`],
        ['DELETE', `/api/v1/image/${e}`],
        ['GET', `/api/albums/${e}`],
        ['PUT', `/api/albums/${e}`],
        ['DELETE', `/api/albums/${e}`],
        ['POST', `/api/albums/${e}/images`],
        ['DELETE', `/api/albums/${album.id}/images/${e}`],
        ['PATCH', `/api/images/${e}/embed`],
        ['DELETE', `/api/admin/images/${e}`],
        ['GET', `/api/users/${e}`],
        ['GET', `/i/${e}`],
        ['GET', `/a/${e}`],
        ['GET', `/cdn/${e}.png`],
        ['GET', `/cdn/medium/${e}.webp`],
      ] as const
    }
    for (const id of malformed) {
      for (const [method, path] of targets(id)) {
        // 7 or 9 letters are malformed image and album ids, but fine usernames.
        if (path.startsWith('/api/users/') && /^[A-Za-z0-9_-]{3,32}$/.test(id)) continue
        bound.length = 0
        recording = true
        const json = JSON.stringify({ title: 'x', nsfw: true, imageId: image.id, embed_profile_id: null })
        const headers = { 'x-api-key': owner.apiKey, authorization: `Bearer ${owner.token}` }
        const res =
          method === 'GET' || method === 'DELETE'
            ? await rawGet(t.server.port, path, headers, method)
            : await rawBody(method, path, { ...headers, 'content-type': 'application/json' }, json)
        recording = false
        expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400)
        expect(res.status, `${method} ${path}`).toBeLessThan(500)
        const leaked = bound.filter((v) => typeof v === 'string' && (v === id || v.toLowerCase() === id.toLowerCase()))
        expect(leaked, `${method} ${path} looked up ${JSON.stringify(id)}`).toEqual([])
      }
    }
  })

  test('malformed numeric and upload ids (embeds, keys, admin users, webhooks, reports, tus): 400 or 404 before any SQL', async () => {
    // The spy sees these routes reach their tables: a well-formed id that names nothing is looked up (and is a 404).
    for (const [method, path, headers, table] of [
      ...idTargets('999999').filter(([, p]) => !p.includes('/tus/')),
      ...idTargets('A'.repeat(32)).filter(([, p]) => p.includes('/tus/')),
    ]) {
      const res = await spiedRequest(method, path, headers)
      expect(res.status, `${method} ${path}: ${res.body.slice(0, 120)}`).toBe(404)
      expect(statementsOn(table).length, `${method} ${path} never queried ${table}`).toBeGreaterThan(0)
    }
    const malformed = [
      'abc',
      '-1',
      '0',
      '-0',
      '1'.repeat(400),
      '..',
      '../1',
      '1/../2',
      '..\\1',
      '%00',
      '1%00',
      "1' OR '1'='1",
      '1;DROP',
      'A'.repeat(31),
      'A'.repeat(33),
      'A'.repeat(300),
    ]
    expect(await refusedBeforeSql(malformed)).toBe(malformed.length * idTargets('x').length)
  })

  test('non-integer and over-long numeric ids are refused before any SQL too', async () => {
    const malformed = ['1.5', '2.000001', '9'.repeat(30)]
    expect(await refusedBeforeSql(malformed)).toBe(malformed.length * idTargets('x').length)
  })

  test('SVG originals carry the sandbox CSP and nosniff; every original and thumbnail carries nosniff', async () => {
    const res = await t.fetch(`/cdn/${svg.id}.svg`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('image/svg+xml')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("default-src 'none'")
    expect(csp.split(';').map((d) => d.trim())).toContain('sandbox')
    expect(csp).not.toContain('allow-scripts')
    for (const path of [`/cdn/${image.id}.png`, `/cdn/medium/${image.id}.webp`, `/cdn/medium/${svg.id}.webp`]) {
      const r = await t.fetch(path)
      expect(r.status).toBe(200)
      expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    }
    // HEAD and ranges get the same headers.
    for (const init of [{ method: 'HEAD' }, { headers: { range: 'bytes=0-10' } }]) {
      const r = await t.fetch(`/cdn/${svg.id}.svg`, init)
      expect(r.headers.get('content-security-policy')).toBe(csp)
      expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    }
  })
})

/** [method, path, headers, the table the route looks its id up in, whether the route's authentication queries first]. */
type IdTarget = [string, string, Record<string, string>, string, boolean]

/** The id routes other than images and albums, with `e` (already encoded) as the id. */
function idTargets(e: string): IdTarget[] {
  const bearer = { authorization: `Bearer ${owner.token}` }
  const tus = { 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }
  return [
    ['PUT', `/api/embeds/${e}`, bearer, 'embed_profiles', false],
    ['DELETE', `/api/embeds/${e}`, bearer, 'embed_profiles', false],
    ['DELETE', `/api/keys/${e}`, bearer, 'api_keys', false],
    ['PATCH', `/api/admin/users/${e}`, bearer, 'users', false],
    ['DELETE', `/api/webhooks/${e}`, bearer, 'webhooks', false],
    ['POST', `/api/admin/reports/${e}/dismiss`, bearer, 'reports', false],
    ['POST', `/api/admin/reports/${e}/action`, bearer, 'reports', false],
    // A tus id is a free string in the schema, checked by the service: anonymously no query at all runs...
    ...['GET', 'PATCH', 'DELETE', 'HEAD'].map((m): IdTarget => [m, `/api/tus/${e}`, tus, 'tus_uploads', false]),
    // ...while an API key is looked up before any route runs: then no query may touch the uploads.
    ...['GET', 'PATCH', 'DELETE', 'HEAD'].map(
      (m): IdTarget => [m, `/api/v1/tus/${e}`, { ...tus, 'x-api-key': owner.apiKey }, 'tus_uploads', true],
    ),
  ]
}

/** One request with the database spy on (what it recorded is in `bound` and `statements` afterwards). */
async function spiedRequest(method: string, path: string, headers: Record<string, string>) {
  bound.length = 0
  statements.length = 0
  recording = true
  try {
    if (method === 'GET' || method === 'DELETE' || method === 'HEAD')
      return await rawGet(t.server.port, path, headers, method)
    if (path.includes('/tus/')) return await rawBody(method, path, headers, 'x')
    const json = JSON.stringify({
      name: 'x',
      title: 'x',
      banned: true,
      role: 'user',
      deleteImage: true,
      banOwner: true,
    })
    return await rawBody(method, path, { ...headers, 'content-type': 'application/json' }, json)
  } finally {
    recording = false
  }
}

const statementsOn = (table: string) => statements.filter((sql) => sql.includes(`"${table}"`))

/** Sends every malformed id to every id target: 400 or 404 with { error }, and no SQL (none on its table if auth queries first). */
async function refusedBeforeSql(malformed: string[]): Promise<number> {
  let checked = 0
  for (const id of malformed) {
    // Dots encoded too, so the id stays one path segment (a server that resolves `..` would route elsewhere).
    const e = encodeURIComponent(id).replace(/\./g, '%2E')
    for (const [method, path, headers, table, authQueriesFirst] of idTargets(e)) {
      const res = await spiedRequest(method, path, headers)
      const what = `${method} ${path.slice(0, 80)} (${JSON.stringify(id.slice(0, 40))}) → ${res.status} ${res.body.slice(0, 100)}`
      expect([400, 404], what).toContain(res.status)
      if (method !== 'HEAD') expect(typeof JSON.parse(res.body).error, what).toBe('string')
      expect(authQueriesFirst ? statementsOn(table) : statements, what).toEqual([])
      checked++
    }
  }
  return checked
}

/** A request with a JSON body and an exact request target. */
function rawBody(method: string, target: string, headers: Record<string, string>, body: string) {
  const head = `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${Object.entries({
    ...headers,
    'content-length': String(Buffer.byteLength(body)),
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`
  return rawRequest(t.server.port, head, body)
}
