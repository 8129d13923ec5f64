import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { Elysia, t as schema } from 'elysia'
import { DomainError, OffsetConflict, RateLimited } from '../../src/errors'
import { MAX_JSON_BYTES } from '../../src/http/body-limit'
import { errorModel, HttpError } from '../../src/http/errors'
import { jsonBody, makeAdmin, registerUser, startTestServer, type TestServer } from '../helpers'

/** Keys of Elysia's default validation error body: none may leak into ours. */
const FRAMEWORK_KEYS = ['type', 'on', 'found', 'property', 'expected', 'errors', 'summary', 'message', 'stack']

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

async function expectErrorBody(res: Response, status: number) {
  expect(res.status).toBe(status)
  expect(res.headers.get('content-type') ?? '').toContain('application/json')
  const text = await res.text()
  const body = JSON.parse(text)
  expect(typeof body).toBe('object')
  expect(Array.isArray(body)).toBe(false)
  expect(typeof body.error).toBe('string')
  expect(body.error.length).toBeGreaterThan(0)
  for (const key of FRAMEWORK_KEYS) expect(body).not.toHaveProperty(key)
  return body as { error: string }
}

describe('unknown routes', () => {
  test('404 { error } for unknown /api paths; 405 with Allow for a known path and another method', async () => {
    await expectErrorBody(await t.fetch('/api/does-not-exist'), 404)
    await expectErrorBody(await t.fetch('/api/auth/nope', { method: 'POST', ...jsonBody({}) }), 404)
    await expectErrorBody(await t.fetch('/api/v2/upload', { method: 'POST' }), 404)
    const wrongMethod = await t.fetch('/api/auth/me', { method: 'DELETE' })
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD')
    await expectErrorBody(wrongMethod, 405)
  })
})

describe('request bodies', () => {
  test('malformed JSON: 400 { error }', async () => {
    for (const body of ['{bad', '{"username": "x",}', '[1, 2', 'undefined']) {
      const res = await t.fetch('/api/auth/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      await expectErrorBody(res, 400)
    }
    const login = await t.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"username":',
    })
    await expectErrorBody(login, 400)
  })

  test('wrong content type: 400 { error }, and nothing is created', async () => {
    const name = `ctype${Date.now().toString(36)}`
    const fields = { username: name, email: `${name}@example.com`, password: 'password123' }
    const attempts: RequestInit[] = [
      { headers: { 'content-type': 'text/plain' }, body: JSON.stringify(fields) },
      {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      },
      {
        body: (() => {
          const f = new FormData()
          for (const [k, v] of Object.entries(fields)) f.append(k, v)
          return f
        })(),
      },
      { headers: { 'content-type': 'application/xml' }, body: '<user/>' },
    ]
    for (const init of attempts) {
      await expectErrorBody(await t.fetch('/api/auth/register', { method: 'POST', ...init }), 400)
    }
    // None of them registered the account.
    const login = await t.fetch('/api/auth/login', {
      method: 'POST',
      ...jsonBody({ username: name, password: 'password123' }),
    })
    expect(login.status).toBe(401)
  })

  test('JSON bodies over the cap: 413 { error }', async () => {
    const big = JSON.stringify({ username: 'x'.repeat(MAX_JSON_BYTES + 10), email: 'a@b.cd', password: 'password123' })
    await expectErrorBody(
      await t.fetch('/api/auth/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: big,
      }),
      413,
    )
  })

  test('bodiless POST and DELETE requests are not refused for their (absent) content type', async () => {
    const account = await registerUser(t)
    const resend = await t.fetch('/api/auth/resend-verification', { method: 'POST', headers: account.bearer })
    expect(resend.status).toBe(200)
    const key = (await (
      await t.fetch('/api/keys', { method: 'POST', ...jsonBody({ name: 'k' }, account.bearer) })
    ).json()) as any
    const del = await t.fetch(`/api/keys/${key.key.id}`, { method: 'DELETE', headers: account.bearer })
    expect(del.status).toBe(200)
  })
})

describe('validation errors', () => {
  test('bodies are { error: string }, never the framework default', async () => {
    const account = await registerUser(t)
    const admin = await registerUser(t)
    await makeAdmin(t, admin.user.id)
    const cases: [string, RequestInit][] = [
      ['/api/auth/register', { method: 'POST', ...jsonBody({ username: 42, email: [], password: {} }) }],
      ['/api/auth/register', { method: 'POST', ...jsonBody({}) }],
      ['/api/auth/register', { method: 'POST', ...jsonBody([1, 2, 3]) }],
      ['/api/auth/login', { method: 'POST', ...jsonBody({ username: 'x' }) }],
      ['/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: 5 }) }],
      ['/api/account', { method: 'PATCH', ...jsonBody({ privateAccount: 'yes' }, account.bearer) }],
      ['/api/keys', { method: 'POST', ...jsonBody({ name: '' }, account.bearer) }],
      ['/api/keys/abc', { method: 'DELETE', headers: account.bearer }],
      ['/api/admin/users/abc', { method: 'PATCH', ...jsonBody({ role: 'root' }, admin.bearer) }],
      [`/api/admin/users?q=${'x'.repeat(101)}`, { headers: admin.bearer }],
      ['/api/admin/users?page=0', { headers: admin.bearer }],
    ]
    for (const [path, init] of cases) {
      const res = await t.fetch(path, init)
      expect({ path, status: res.status }).toEqual({ path, status: 400 })
      await expectErrorBody(res, 400)
    }
  })
})

describe('unexpected failures', () => {
  const app = new Elysia()
    .use(errorModel)
    .get('/boom', () => {
      throw new Error('database exploded at /work/main/src/secret/path.ts:12')
    })
    .get('/type-error', () => (undefined as any).nope)
    .get('/teapot', () => {
      throw new HttpError(418, 'short and stout', { hint: 'tip me over' }, { 'x-extra': 'yes' })
    })
    .get('/limited', () => {
      throw new RateLimited('Slow down', { limit: 5, remaining: 0, resetSeconds: 0 })
    })
    .get('/offset', () => {
      throw new OffsetConflict('Upload-Offset mismatch', 7)
    })
    .get('/unmapped', () => {
      throw new DomainError('a kind the table does not know')
    })
    .post('/typed', ({ body }) => body, { body: schema.Object({ n: schema.Number() }) })
    .get('/wrong-shape', () => ({ views: 'many' }) as unknown as { views: number }, {
      response: schema.Object({ views: schema.Integer() }),
    })

  test('500 { error: "Internal server error" } with no stack trace or internal path', async () => {
    const logged = spyOn(console, 'error').mockImplementation(() => {})
    try {
      // '/wrong-shape' answers something its own response schema refuses: a server bug, never a client's 400.
      for (const path of ['/boom', '/type-error', '/wrong-shape']) {
        const res = await app.handle(new Request(`http://localhost${path}`))
        expect(res.status).toBe(500)
        expect(res.headers.get('content-type') ?? '').toContain('application/json')
        const text = await res.text()
        expect(JSON.parse(text)).toEqual({ error: 'Internal server error' })
        expect(text).not.toContain('exploded')
        expect(text).not.toContain('/work/')
        expect(text).not.toContain('.ts')
        expect(text).not.toMatch(/\bat\s/)
        expect(text).not.toContain('views')
      }
      // The failure is still logged for the operator.
      expect(logged).toHaveBeenCalled()
    } finally {
      logged.mockRestore()
    }
  })

  test('an HttpError keeps its status, message, extra fields and headers', async () => {
    const res = await app.handle(new Request('http://localhost/teapot'))
    expect(res.status).toBe(418)
    expect(res.headers.get('x-extra')).toBe('yes')
    expect(await res.json()).toEqual({ error: 'short and stout', hint: 'tip me over' })
  })

  test('a domain error is answered by the table: its status and headers, its message and extra fields', async () => {
    const limited = await app.handle(new Request('http://localhost/limited'))
    expect(limited.status).toBe(429)
    // Retry-After is at least 1 s even when the window resets now.
    expect(limited.headers.get('retry-after')).toBe('1')
    expect(limited.headers.get('ratelimit-limit')).toBe('5')
    expect(limited.headers.get('ratelimit-remaining')).toBe('0')
    expect(limited.headers.get('ratelimit-reset')).toBe('0')
    expect(await limited.json()).toEqual({ error: 'Slow down', retryAfter: 0 })
    const offset = await app.handle(new Request('http://localhost/offset'))
    expect(offset.status).toBe(409)
    expect(offset.headers.get('upload-offset')).toBe('7')
    expect(await offset.json()).toEqual({ error: 'Upload-Offset mismatch', offset: 7 })
    const logged = spyOn(console, 'error').mockImplementation(() => {})
    try {
      const unmapped = await app.handle(new Request('http://localhost/unmapped'))
      expect(unmapped.status).toBe(500)
      expect(await unmapped.json()).toEqual({ error: 'Internal server error' })
    } finally {
      logged.mockRestore()
    }
  })

  test('the error model alone also maps validation and unknown routes', async () => {
    const invalid = await app.handle(new Request('http://localhost/typed', { method: 'POST', ...jsonBody({ n: 'x' }) }))
    await expectErrorBody(invalid, 400)
    await expectErrorBody(await app.handle(new Request('http://localhost/nowhere')), 404)
  })
})

describe('GET /healthz', () => {
  test('{ status: "ok", version } while the database answers', async () => {
    const res = await t.json('/healthz')
    expect(res.status).toBe(200)
    // Which version: test/ops/version.test.ts.
    expect(res.body).toEqual({ status: 'ok', version: expect.any(String) })
  })
})
