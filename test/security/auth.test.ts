import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { createHmac, createSign, generateKeyPairSync } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { apiKeys, users } from '../../src/db/schema'
import { safeEqual } from '../../src/lib/crypto'
import { registerUser, type TestServer, userWithKey } from '../helpers'
import { expectError, send, startServer } from './support'

/** The secret startTestServer configures (test/helpers.ts). */
const SECRET = 'test-secret-'.padEnd(48, 'x')
let t: TestServer
let user: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  // The timing test makes two dozen failed logins from one address: the login throttle (test/security/throttles.test.ts)
  // is raised out of its way.
  t = await startServer({
    GLOBAL_RATE_LIMIT: '100000',
    METRICS_TOKEN: 'metrics-secret-token',
    LOGIN_FAILURES_PER_ACCOUNT: '1000',
    LOGIN_FAILURES_PER_IP: '1000',
  })
  user = await userWithKey(t)
})
afterAll(() => t.stop())

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)

/** A JWT with any header, payload and signing function (the attacker's toolbox). */
function forge(header: Record<string, unknown>, payload: Record<string, unknown>, sign: (input: string) => string) {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`
  return `${input}.${sign(input)}`
}
const hmac = (alg: 'sha256' | 'sha384' | 'sha512', key: string | Buffer) => (input: string) =>
  createHmac(alg, key).update(input).digest('base64url')
/** The session id of a token the server issued (a forged token needs a live session too). */
const sidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sid
const claims = (extra: Record<string, unknown> = {}) => ({
  sub: String(user.user.id),
  sid: sidOf(user.token),
  iat: now(),
  exp: now() + 3600,
  ...extra,
})

const me = (token: string, headers: Record<string, string> = {}) =>
  t.json('/api/auth/me', { headers: { authorization: `Bearer ${token}`, ...headers } })

describe('JWT: the algorithm and the secret are pinned', () => {
  test('control: an HS256 token signed with the secret is accepted (so the refusals below are about the trick)', async () => {
    const res = await me(forge({ alg: 'HS256', typ: 'JWT' }, claims(), hmac('sha256', SECRET)))
    expect(res.status).toBe(200)
    expect(res.body.user.id).toBe(user.user.id)
  })

  test('alg none (any spelling), with or without a signature: 401', async () => {
    for (const alg of ['none', 'None', 'NONE', 'nOnE', '']) {
      for (const signature of ['', 'x', hmac('sha256', SECRET)('x')]) {
        const token = forge({ alg, typ: 'JWT' }, claims(), () => signature)
        expectError(await me(token), 401)
      }
    }
  })

  test('other HMAC algorithms with the right secret (HS384, HS512): 401', async () => {
    expectError(await me(forge({ alg: 'HS384', typ: 'JWT' }, claims(), hmac('sha384', SECRET))), 401)
    expectError(await me(forge({ alg: 'HS512', typ: 'JWT' }, claims(), hmac('sha512', SECRET))), 401)
  })

  test('RS256/ES256 tricks: an HMAC under an asymmetric alg, a public key as the HMAC secret, an embedded jwk: 401', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString()
    const rs256 = (input: string) => createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')
    const tokens = [
      // The signature is a valid HS256 MAC with the real secret, but the header claims RS256 / ES256 / PS256.
      forge({ alg: 'RS256', typ: 'JWT' }, claims(), hmac('sha256', SECRET)),
      forge({ alg: 'ES256', typ: 'JWT' }, claims(), hmac('sha256', SECRET)),
      forge({ alg: 'PS256', typ: 'JWT' }, claims(), hmac('sha256', SECRET)),
      // The classic key confusion: HS256 keyed with a public key (the attacker's; the server has none to confuse).
      forge({ alg: 'HS256', typ: 'JWT' }, claims(), hmac('sha256', pem)),
      // A real RS256 signature, with the verifying key offered in the header (jwk injection) or by URL (jku).
      forge({ alg: 'RS256', typ: 'JWT', jwk: publicKey.export({ format: 'jwk' }) }, claims(), rs256),
      forge({ alg: 'RS256', typ: 'JWT', jku: 'http://127.0.0.1:1/jwks.json' }, claims(), rs256),
      forge({ alg: 'RS256', typ: 'JWT' }, claims(), rs256),
    ]
    for (const token of tokens) expectError(await me(token), 401)
  })

  test('wrong secret, tampered payload, expired, not yet valid, unknown or malformed subject: 401', async () => {
    const other = await registerUser(t)
    const good = forge({ alg: 'HS256', typ: 'JWT' }, claims(), hmac('sha256', SECRET))
    const [h, , s] = good.split('.')
    const tampered = `${h}.${b64url(JSON.stringify(claims({ sub: String(other.user.id) })))}.${s}`
    const tokens = [
      forge({ alg: 'HS256', typ: 'JWT' }, claims(), hmac('sha256', 'not-the-secret')),
      forge({ alg: 'HS256', typ: 'JWT' }, claims(), hmac('sha256', '')),
      tampered,
      forge({ alg: 'HS256', typ: 'JWT' }, claims({ exp: now() - 10 }), hmac('sha256', SECRET)),
      forge({ alg: 'HS256', typ: 'JWT' }, claims({ nbf: now() + 3600 }), hmac('sha256', SECRET)),
      forge({ alg: 'HS256', typ: 'JWT' }, claims({ sub: '999999' }), hmac('sha256', SECRET)),
      forge({ alg: 'HS256', typ: 'JWT' }, claims({ sub: 'admin' }), hmac('sha256', SECRET)),
      forge({ alg: 'HS256', typ: 'JWT' }, claims({ sub: `${user.user.id} OR 1=1` }), hmac('sha256', SECRET)),
      forge({ alg: 'HS256', typ: 'JWT' }, claims({ sub: user.user.id }), hmac('sha256', SECRET)),
      forge({ alg: 'HS256', typ: 'JWT' }, { exp: now() + 3600 }, hmac('sha256', SECRET)),
      good.slice(0, -2),
      `${good}.extra`,
      'a.b',
      'a.b.c',
      '..',
      'not-a-jwt',
    ]
    for (const token of tokens) expectError(await me(token), 401)
    // The real token still works: the tampering changed nothing.
    expect((await me(user.token)).status).toBe(200)
  })

  test('malformed Authorization headers: 401, never treated as anonymous', async () => {
    for (const value of [
      'Bearer',
      'Bearer ',
      `Basic ${b64url('a:b')}`,
      `Token ${user.token}`,
      `Bearer ${user.token} extra`,
      `bearer${user.token}`,
    ]) {
      expectError(await t.json('/api/auth/me', { headers: { authorization: value } }), 401)
      // On the optional-session upload too: a broken credential is a 401, not an anonymous upload.
      expectError(
        await t.json('/api/upload', { method: 'POST', headers: { authorization: value }, body: new FormData() }),
        401,
      )
    }
  })

  test('the API reads credentials from headers only: a token in a cookie or the query string is ignored', async () => {
    expectError(await t.json(`/api/auth/me?token=${user.token}`), 401)
    expectError(await t.json(`/api/auth/me?access_token=${user.token}`), 401)
    expectError(
      await t.json('/api/auth/me', {
        headers: { cookie: `token=${user.token}; auth=${user.token}; session=${user.token}` },
      }),
      401,
    )
    expectError(await t.json(`/api/v1/me?api_key=${user.apiKey}&key=${user.apiKey}`), 401)
    expectError(await t.json('/api/v1/me', { headers: { cookie: `apiKey=${user.apiKey}` } }), 401)
    // A JWT is not an API key, and an API key is not a JWT.
    expectError(await t.json('/api/v1/me', { headers: { 'x-api-key': user.token } }), 401)
    expectError(await me(user.apiKey), 401)
  })
})

describe('API keys', () => {
  test('a wrong key with the right prefix, a truncated key, a revoked key: 401 at once', async () => {
    const fresh = await userWithKey(t)
    for (const key of [
      `${fresh.apiKey.slice(0, -1)}X`,
      fresh.apiKey.slice(0, -1),
      `${fresh.apiKey}x`,
      fresh.apiKey.toUpperCase(),
      'ihk_',
      `${fresh.apiKey} x`,
    ]) {
      if (key === fresh.apiKey) continue
      expectError(await t.json('/api/v1/me', { headers: { 'x-api-key': key } }), 401)
    }
    expect((await t.json('/api/v1/me', { headers: fresh.keyHeader })).status).toBe(200)
    const keys = (await t.json('/api/keys', { headers: fresh.bearer })).body.keys
    expect((await t.json(`/api/keys/${keys[0].id}`, { method: 'DELETE', headers: fresh.bearer })).status).toBe(200)
    expectError(await t.json('/api/v1/me', { headers: fresh.keyHeader }), 401)
  })

  test('secrets are never stored or shown again: only a SHA-256 of the key is in the database', async () => {
    const rows = await t.server.db.select().from(apiKeys)
    const dump = JSON.stringify(rows)
    expect(dump).not.toContain(user.apiKey)
    expect(dump).toContain(new Bun.CryptoHasher('sha256').update(user.apiKey).digest('hex'))
    const listed = JSON.stringify((await t.json('/api/keys', { headers: user.bearer })).body)
    expect(listed).not.toContain(user.apiKey)
  })
})

describe('no user enumeration through login', () => {
  test('unknown user and wrong password: the same status and the same body', async () => {
    const unknown = await t.json(
      '/api/auth/login',
      send('POST', { username: 'nobody-here-at-all', password: 'whatever password' }),
    )
    const wrong = await t.json(
      '/api/auth/login',
      send('POST', { username: user.user.username, password: 'wrong password!' }),
    )
    const unknownEmail = await t.json(
      '/api/auth/login',
      send('POST', { username: 'nobody@example.com', password: 'whatever password' }),
    )
    const wrongByEmail = await t.json(
      '/api/auth/login',
      send('POST', { username: user.user.email, password: 'wrong password!' }),
    )
    for (const res of [unknown, wrong, unknownEmail, wrongByEmail]) expectError(res, 401)
    expect(wrong.body).toEqual(unknown.body)
    expect(wrongByEmail.body).toEqual(unknown.body)
    expect(unknownEmail.body).toEqual(unknown.body)
    expect(JSON.stringify(wrong.headers.get('content-length'))).toBe(
      JSON.stringify(unknown.headers.get('content-length')),
    )
  })

  test('unknown user and wrong password do the same work: one argon2id verification of the same cost', async () => {
    // Counted, not timed (the time an attacker would compare is the bench's `login` figure): without the dummy hash an
    // unknown user would be answered without any verification, in ~1 ms instead of an argon2id's few hundred.
    const [{ h: storedHash }] = await t.server.db
      .select({ h: users.passwordHash })
      .from(users)
      .where(eq(users.id, user.user.id))
    const verify = spyOn(Bun.password, 'verify')
    try {
      const verified = async (username: string) => {
        verify.mockClear()
        expectError(await t.json('/api/auth/login', send('POST', { username, password: 'definitely wrong' })), 401)
        expect(verify.mock.calls).toHaveLength(1)
        const [password, hash] = verify.mock.calls[0] as [string, string]
        expect(password).toBe('definitely wrong')
        // It really ran: the answer came from the verification, not before it.
        expect(await verify.mock.results[0].value).toBe(false)
        return hash
      }
      expect(await verified(user.user.username)).toBe(storedHash)
      expect(await verified(user.user.email)).toBe(storedHash)
      const dummy = await verified('nobody-here-at-all')
      expect(await verified('nobody@example.com')).toBe(dummy)
      expect(dummy).not.toBe(storedHash)
      // The same algorithm, version, memory, passes and parallelism: `$argon2id$v=19$m=...,t=...,p=...$salt$hash`.
      const cost = (hash: string) => hash.split('$').slice(1, 4).join('$')
      expect(cost(storedHash)).toMatch(/^argon2id\$v=\d+\$m=\d+,t=\d+,p=\d+$/)
      expect(cost(dummy)).toBe(cost(storedHash))
    } finally {
      verify.mockRestore()
    }
  })

  test('register reveals only what it must (409 for a taken name or email), and nothing about the other account', async () => {
    const taken = await t.json(
      '/api/auth/register',
      send('POST', { username: user.user.username, email: 'fresh@example.com', password: 'long enough password' }),
    )
    expectError(taken, 409)
    expect(JSON.stringify(taken.body)).not.toContain(user.user.email)
    const takenEmail = await t.json(
      '/api/auth/register',
      send('POST', { username: 'fresh-name', email: user.user.email.toUpperCase(), password: 'long enough password' }),
    )
    expectError(takenEmail, 409)
    expect(JSON.stringify(takenEmail.body)).not.toContain(user.user.username)
  })
})

describe('timing-safe comparisons', () => {
  test('safeEqual: equal, different, different lengths, empty', () => {
    expect(safeEqual('abc', 'abc')).toBe(true)
    expect(safeEqual('abc', 'abd')).toBe(false)
    expect(safeEqual('abc', 'abcd')).toBe(false)
    expect(safeEqual('', '')).toBe(true)
    expect(safeEqual('', 'a')).toBe(false)
    expect(safeEqual('é', 'e\u0301')).toBe(false)
  })

  test('the metrics token: right one 200, wrong ones (prefix, longer, shorter, empty) 401', async () => {
    expect((await t.fetch('/metrics', { headers: { authorization: 'Bearer metrics-secret-token' } })).status).toBe(200)
    for (const wrong of ['metrics-secret-toke', 'metrics-secret-token2', 'm', 'x'.repeat(1000)]) {
      const res = await t.fetch('/metrics', { headers: { authorization: `Bearer ${wrong}` } })
      expect(res.status).toBe(401)
      await res.arrayBuffer()
    }
    expect((await t.fetch('/metrics')).status).toBe(401)
  })

  test('a wrong delete token for an anonymous upload: 404, the image stays', async () => {
    const { makeImage, uploadForm } = await import('../fixtures')
    const res = await t.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('png', 8, 8, 9) }]),
    })
    expect(res.status).toBe(201)
    const token: string = res.body.deleteToken
    for (const wrong of [
      token.slice(0, -1),
      `${token}x`,
      token.toUpperCase() === token ? token.toLowerCase() : token.toUpperCase(),
      '',
      'x',
    ]) {
      if (wrong === token) continue
      const del = await t.json(`/api/v1/image/${res.body.id}`, {
        method: 'DELETE',
        headers: wrong ? { 'x-delete-token': wrong } : {},
      })
      expect(del.status).toBeGreaterThanOrEqual(400)
      expect(del.status).toBeLessThan(500)
    }
    expect((await t.json(`/api/v1/image/${res.body.id}`)).status).toBe(200)
    expect(
      (await t.json(`/api/v1/image/${res.body.id}`, { method: 'DELETE', headers: { 'x-delete-token': token } })).status,
    ).toBe(200)
  })
})
