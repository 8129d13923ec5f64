import { afterAll, afterEach, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose'
import { loadConfig } from '../../src/config'
import { engine } from '../../src/db/engine'
import { verificationTokens } from '../../src/db/schema'
import { startServer } from '../../src/server'
import { tableRows } from '../db-dump'
import { jsonBody, registerUser, startTestServer, type TestServer } from '../helpers'
import { noModel } from '../moderation/fake-classifier'

/** The secret test/helpers.ts gives every test server. */
const SECRET = 'test-secret-'.padEnd(48, 'x')
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const SEVEN_DAYS = 7 * 24 * 3600

let t: TestServer
let seq = 0
const uniq = (base = 'u') => `${base}${Date.now().toString(36)}${seq++}`

beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

const register = (body: Record<string, unknown>) => t.json('/api/auth/register', { method: 'POST', ...jsonBody(body) })
const login = (username: string, password: string) =>
  t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username, password }) })
const me = (headers: Record<string, string> = {}) => t.json('/api/auth/me', { headers })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

function expectError(res: { status: number; body: any }, status: number) {
  expect(res.status).toBe(status)
  expect(typeof res.body.error).toBe('string')
  expect(res.body.error.length).toBeGreaterThan(0)
  expect(res.body.success).not.toBe(true)
  expect(res.body.token).toBeUndefined()
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** Captures the server log (console.log) while `action` runs and returns the verification tokens it printed. */
async function captureVerificationTokens(action: () => Promise<unknown>): Promise<string[]> {
  const spy = spyOn(console, 'log').mockImplementation(() => {})
  try {
    await action()
    const lines = spy.mock.calls.map((args) => args.map(String).join(' '))
    return lines.flatMap((line) => [...line.matchAll(/verification token: ([A-Za-z0-9_\-.~+/=]+)/g)].map((m) => m[1]))
  } finally {
    spy.mockRestore()
  }
}

describe('POST /api/auth/register', () => {
  test('201 with { success, token, user } and the exact user shape', async () => {
    const name = uniq('Reg')
    const before = Date.now()
    const res = await register({ username: name, email: `${name}@Example.com`, password: 'correct horse battery' })
    expect(res.status).toBe(201)
    expect(Object.keys(res.body).sort()).toEqual(['success', 'token', 'user'])
    expect(res.body.success).toBe(true)
    expect(typeof res.body.token).toBe('string')
    const user = res.body.user
    expect(Object.keys(user).sort()).toEqual([
      'createdAt',
      'email',
      'emailVerified',
      'id',
      'privateAccount',
      'role',
      'username',
    ])
    expect(Number.isInteger(user.id) && user.id > 0).toBe(true)
    expect(user).toMatchObject({ username: name, role: 'user', emailVerified: false, privateAccount: false })
    expect(user.email.toLowerCase()).toBe(`${name}@example.com`.toLowerCase())
    expect(user.createdAt).toMatch(ISO_MS)
    const created = Date.parse(user.createdAt)
    expect(created).toBeGreaterThanOrEqual(before - 2000)
    expect(created).toBeLessThanOrEqual(Date.now() + 2000)
    // The token from registration is a working session for that account.
    const who = await me(bearer(res.body.token))
    expect(who.status).toBe(200)
    expect(who.body.user).toEqual(user)
  })

  test('duplicate username (any case) and duplicate email (any case): 409', async () => {
    const name = uniq('Dup')
    expect((await register({ username: name, email: `${name}@example.com`, password: 'password123' })).status).toBe(201)
    expectError(await register({ username: name, email: `other${name}@example.com`, password: 'password123' }), 409)
    expectError(
      await register({ username: name.toLowerCase(), email: `x${name}@example.com`, password: 'password123' }),
      409,
    )
    expectError(
      await register({ username: name.toUpperCase(), email: `y${name}@example.com`, password: 'password123' }),
      409,
    )
    expectError(await register({ username: `${name}b`, email: `${name}@example.com`, password: 'password123' }), 409)
    expectError(
      await register({ username: `${name}c`, email: `${name}@EXAMPLE.COM`.toUpperCase(), password: 'password123' }),
      409,
    )
  })

  test('username rules: 3-32 of [A-Za-z0-9_-], else 400', async () => {
    const bad = ['ab', 'a'.repeat(33), 'has space', 'dot.ted', 'bang!', 'émile', 'semi;colon', '', 'slash/x']
    for (const username of bad) {
      const res = await register({ username, email: `${uniq('e')}@example.com`, password: 'password123' })
      expect({ username, status: res.status }).toEqual({ username, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
    // The boundaries themselves are accepted.
    const suffix = uniq('').slice(-6)
    for (const username of [`a${suffix}`.slice(0, 3), `${suffix}_-`.padEnd(32, 'Z')]) {
      const res = await register({ username, email: `${uniq('ok')}@example.com`, password: 'password123' })
      expect({ username, status: res.status }).toEqual({ username, status: 201 })
    }
  })

  test('invalid email: 400', async () => {
    for (const email of [
      'notanemail',
      'no-at.example.com',
      'two@@example.com',
      'sp ace@example.com',
      '@example.com',
      'user@',
      '',
    ]) {
      const res = await register({ username: uniq('em'), email, password: 'password123' })
      expect({ email, status: res.status }).toEqual({ email, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
  })

  test('password must be 8-256 characters', async () => {
    expectError(await register({ username: uniq('pw'), email: `${uniq('pw')}@example.com`, password: '1234567' }), 400)
    expectError(
      await register({ username: uniq('pw'), email: `${uniq('pw')}@example.com`, password: 'x'.repeat(257) }),
      400,
    )
    expect(
      (await register({ username: uniq('pw'), email: `${uniq('pw')}@example.com`, password: '12345678' })).status,
    ).toBe(201)
    expect(
      (await register({ username: uniq('pw'), email: `${uniq('pw')}@example.com`, password: 'x'.repeat(256) })).status,
    ).toBe(201)
  })

  test('missing or wrongly typed fields: 400 with { error }', async () => {
    expectError(await register({ username: uniq('m'), password: 'password123' }), 400)
    expectError(await register({ username: 12345, email: `${uniq('m')}@example.com`, password: 'password123' }), 400)
    expectError(await register({}), 400)
  })
})

describe('POST /api/auth/login', () => {
  let account: Awaited<ReturnType<typeof registerUser>>
  beforeAll(async () => {
    account = await registerUser(t, uniq('Login'))
  })

  test('by username (any case) and by email: 200 { success, token, user }', async () => {
    for (const id of [
      account.user.username,
      account.user.username.toUpperCase(),
      account.user.email,
      account.user.email.toUpperCase(),
    ]) {
      const res = await login(id, account.password)
      expect({ id, status: res.status }).toEqual({ id, status: 200 })
      expect(res.body.success).toBe(true)
      expect(res.body.user).toEqual(account.user)
      const who = await me(bearer(res.body.token))
      expect(who.status).toBe(200)
      expect(who.body.user.id).toBe(account.user.id)
    }
  })

  test('wrong password and unknown account: 401 with the same message', async () => {
    const wrong = await login(account.user.username, 'not the password')
    const unknown = await login(uniq('nobody'), 'not the password')
    const unknownEmail = await login(`${uniq('nobody')}@example.com`, account.password)
    expectError(wrong, 401)
    expectError(unknown, 401)
    expectError(unknownEmail, 401)
    expect(unknown.body).toEqual(wrong.body)
    expect(unknownEmail.body).toEqual(wrong.body)
  })

  test('missing password: 400', async () => {
    expectError(
      await t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username: account.user.username }) }),
      400,
    )
  })
})

describe('GET /api/auth/me and the JWT', () => {
  let account: Awaited<ReturnType<typeof registerUser>>
  beforeAll(async () => {
    account = await registerUser(t, uniq('Jwt'))
  })
  const sign = (payload: Record<string, unknown>, secret = SECRET) =>
    new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(secret))

  test('a valid token: 200 { success, user }', async () => {
    const res = await me(account.bearer)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, user: account.user })
  })

  test('the token is HS256 and expires 7 days after it was issued', async () => {
    const header = decodeProtectedHeader(account.token)
    expect(header.alg).toBe('HS256')
    const claims = decodeJwt(account.token)
    expect(typeof claims.iat).toBe('number')
    expect(typeof claims.exp).toBe('number')
    // exp and iat are each floored to the second from two clock reads, so they may be a second apart.
    expect(claims.exp! - claims.iat!).toBeGreaterThanOrEqual(SEVEN_DAYS - 1)
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(SEVEN_DAYS)
    expect(Math.abs(claims.exp! - (Date.now() / 1000 + SEVEN_DAYS))).toBeLessThan(120)
    expect(claims.sub).toBe(String(account.user.id))
  })

  test('a token we sign with the server secret works (control for the negative cases below)', async () => {
    // With the session id of a token the server issued: a signed token needs a live session too.
    const res = await me(bearer(await sign({ sub: String(account.user.id), sid: decodeJwt(account.token).sid })))
    expect(res.status).toBe(200)
    expect(res.body.user.id).toBe(account.user.id)
  })

  test('no token, garbage and malformed headers: 401', async () => {
    expectError(await me(), 401)
    expectError(await me(bearer('garbage')), 401)
    expectError(await me(bearer('a.b.c')), 401)
    expectError(await me({ authorization: 'Basic dXNlcjpwYXNz' }), 401)
    expectError(await me({ authorization: account.token }), 401)
    expectError(await me({ authorization: 'Bearer' }), 401)
  })

  test('tampered signature or payload: 401', async () => {
    const [h, p, s] = account.token.split('.')
    const sig = Buffer.from(s, 'base64url')
    sig[0] ^= 0xff
    expectError(await me(bearer(`${h}.${p}.${sig.toString('base64url')}`)), 401)
    expectError(await me(bearer(`${h}.${p}.`)), 401)
    const other = await registerUser(t, uniq('Victim'))
    const claims = decodeJwt(account.token)
    const forged = b64url({ ...claims, sub: String(other.user.id) })
    expectError(await me(bearer(`${h}.${forged}.${s}`)), 401)
  })

  test('alg none: 401', async () => {
    const now = Math.floor(Date.now() / 1000)
    const payload = b64url({ sub: String(account.user.id), iat: now, exp: now + 3600 })
    for (const alg of ['none', 'None', 'NONE']) {
      const header = b64url({ alg, typ: 'JWT' })
      expectError(await me(bearer(`${header}.${payload}.`)), 401)
      expectError(await me(bearer(`${header}.${payload}`)), 401)
    }
  })

  test('HS256 signed by another secret: 401', async () => {
    expectError(await me(bearer(await sign({ sub: String(account.user.id) }, 'another-secret-'.padEnd(48, 'y')))), 401)
  })

  test('a different HMAC algorithm with the right secret: 401 (algorithm is pinned)', async () => {
    const token = await new SignJWT({ sub: String(account.user.id) })
      .setProtectedHeader({ alg: 'HS512' })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(SECRET))
    expectError(await me(bearer(token)), 401)
  })

  test('expired token: 401', async () => {
    const now = Math.floor(Date.now() / 1000)
    const token = await new SignJWT({ sub: String(account.user.id) })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt(now - 8 * 24 * 3600)
      .setExpirationTime(now - 60)
      .sign(new TextEncoder().encode(SECRET))
    expectError(await me(bearer(token)), 401)
  })

  test('a correctly signed token for an account that does not exist, or with no subject: 401', async () => {
    expectError(await me(bearer(await sign({ sub: '999999999' }))), 401)
    expectError(await me(bearer(await sign({}))), 401)
    expectError(await me(bearer(await sign({ sub: 'abc' }))), 401)
  })
})

describe('email verification', () => {
  afterEach(() => {
    // A failed assertion inside captureVerificationTokens must not leave console.log muted.
    ;(console.log as any).mockRestore?.()
  })

  test('the token is logged, verifies the account once, and only once', async () => {
    const name = uniq('Ver')
    let session: Awaited<ReturnType<typeof registerUser>> | undefined
    const tokens = await captureVerificationTokens(async () => {
      session = await registerUser(t, name)
    })
    expect(tokens.length).toBe(1)
    expect(session!.user.emailVerified).toBe(false)

    const res = await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: tokens[0] }) })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect((await me(session!.bearer)).body.user.emailVerified).toBe(true)

    expectError(await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: tokens[0] }) }), 400)
  })

  test('unknown, empty or missing token: 400', async () => {
    expectError(await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: 'garbage' }) }), 400)
    expectError(await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: 'A'.repeat(43) }) }), 400)
    expectError(await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: '' }) }), 400)
    expectError(await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({}) }), 400)
  })

  test('an expired token: 400, the account stays unverified', async () => {
    let session: Awaited<ReturnType<typeof registerUser>> | undefined
    const [token] = await captureVerificationTokens(async () => {
      session = await registerUser(t, uniq('Exp'))
    })
    expect(token).toBeString()
    // Age the token past its 48 hours directly in the database.
    await t.server.db
      .update(verificationTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(verificationTokens.userId, session!.user.id))
    expectError(await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token }) }), 400)
    expect((await me(session!.bearer)).body.user.emailVerified).toBe(false)
  })

  test('resend-verification issues a new working token; verified accounts get 400', async () => {
    let session: Awaited<ReturnType<typeof registerUser>> | undefined
    const [first] = await captureVerificationTokens(async () => {
      session = await registerUser(t, uniq('Resend'))
    })
    let resend: { status: number; body: any } | undefined
    const again = await captureVerificationTokens(async () => {
      resend = await t.json('/api/auth/resend-verification', { method: 'POST', headers: session!.bearer })
    })
    expect(resend!.status).toBe(200)
    expect(resend!.body.success).toBe(true)
    expect(again.length).toBe(1)
    expect(again[0]).not.toBe(first)

    const res = await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: again[0] }) })
    expect(res.status).toBe(200)
    expect((await me(session!.bearer)).body.user.emailVerified).toBe(true)

    let verifiedResend: { status: number; body: any } | undefined
    const none = await captureVerificationTokens(async () => {
      verifiedResend = await t.json('/api/auth/resend-verification', { method: 'POST', headers: session!.bearer })
    })
    expectError(verifiedResend!, 400)
    expect(none).toEqual([])
  })

  test('resend-verification without a session: 401', async () => {
    expectError(await t.json('/api/auth/resend-verification', { method: 'POST' }), 401)
  })
})

describe('PATCH /api/account', () => {
  test('privateAccount toggles and is kept', async () => {
    const account = await registerUser(t, uniq('Priv'))
    let res = await t.json('/api/account', { method: 'PATCH', ...jsonBody({ privateAccount: true }, account.bearer) })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.user).toEqual({ ...account.user, privateAccount: true })
    expect((await me(account.bearer)).body.user.privateAccount).toBe(true)

    res = await t.json('/api/account', { method: 'PATCH', ...jsonBody({ privateAccount: false }, account.bearer) })
    expect(res.status).toBe(200)
    expect(res.body.user.privateAccount).toBe(false)
    expect((await me(account.bearer)).body.user.privateAccount).toBe(false)
  })

  test('invalid type: 400 and nothing changes; no session: 401', async () => {
    const account = await registerUser(t, uniq('PrivBad'))
    for (const privateAccount of ['yes', 1, null, { on: true }]) {
      expectError(
        await t.json('/api/account', { method: 'PATCH', ...jsonBody({ privateAccount }, account.bearer) }),
        400,
      )
    }
    expect((await me(account.bearer)).body.user.privateAccount).toBe(false)
    expectError(await t.json('/api/account', { method: 'PATCH', ...jsonBody({ privateAccount: true }) }), 401)
  })
})

describe('password storage', () => {
  test('passwords are stored as argon2id hashes, never in clear', async () => {
    const account = await registerUser(t, uniq('Hash'))
    const row = (await tableRows(t.server.db, 'users')).find((r) => Number(r.id) === account.user.id)!
    expect(String(row.password_hash)).toStartWith('$argon2id$')
    for (const value of Object.values(row)) expect(String(value)).not.toContain(account.password)
    expect(await Bun.password.verify(account.password, String(row.password_hash))).toBe(true)
  })
})

// A key generated into the data directory exists on SQLite only: with DATABASE_URL, JWT_SECRET is required (config.ts).
describe.skipIf(engine === 'pg')('JWT secret persistence without JWT_SECRET', () => {
  test('a generated secret is kept in the data directory: sessions survive a restart, other installs reject them', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-jwt-'))
    const otherDir = mkdtempSync(join(tmpdir(), 'imghost-jwt-other-'))
    const env = (dir: string) => ({ DATA_DIR: dir, PORT: '0', LOG_REQUESTS: 'false', JWT_SECRET: '' })
    const servers: Awaited<ReturnType<typeof startServer>>[] = []
    const start = async (dir: string) => {
      const server = await startServer(loadConfig(env(dir)), noModel())
      servers.push(server)
      return { server, url: `http://localhost:${server.port}` }
    }
    try {
      const first = await start(dataDir)
      const name = uniq('Persist')
      const reg = await fetch(`${first.url}/api/auth/register`, {
        method: 'POST',
        ...jsonBody({ username: name, email: `${name}@example.com`, password: 'password123' }),
      })
      expect(reg.status).toBe(201)
      const { token } = (await reg.json()) as { token: string }
      const stored = readFileSync(join(dataDir, 'jwt-secret'), 'utf8').trim()
      expect(stored.length).toBeGreaterThanOrEqual(32)
      expect(stored).not.toBe(SECRET)
      await first.server.stop()
      servers.pop()

      const second = await start(dataDir)
      const res = await fetch(`${second.url}/api/auth/me`, { headers: bearer(token) })
      expect(res.status).toBe(200)
      expect(((await res.json()) as any).user.username).toBe(name)
      expect(readFileSync(join(dataDir, 'jwt-secret'), 'utf8').trim()).toBe(stored)

      // A different install generates its own secret: the token is not valid there (and not 500 either).
      const other = await start(otherDir)
      const foreign = await fetch(`${other.url}/api/auth/me`, { headers: bearer(token) })
      expect(foreign.status).toBe(401)
      expect(readFileSync(join(otherDir, 'jwt-secret'), 'utf8').trim()).not.toBe(stored)
    } finally {
      for (const server of servers) await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
      rmSync(otherDir, { recursive: true, force: true })
    }
  })
})
