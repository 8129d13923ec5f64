/**
 * Password reset by email (issue 23): POST /api/auth/forgot answers the same whether or not the address has an account,
 * is throttled per email and per address, and mails a single-use token valid 1 hour; POST /api/auth/reset sets the
 * password with it and ends every session. The server's clock is the test's (testClock), so expiry needs no waiting.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { jsonBody, registerUser, startTestServer, type TestServer, testClock } from '../helpers'

const TIMEOUT = 60_000
const HOUR_MS = 3_600_000
let t: TestServer
const clock = testClock()
/** Every reset token mailed, by address (in order); verification tokens too, to try them across. */
const resets = new Map<string, string[]>()
const verifications = new Map<string, string>()

beforeAll(async () => {
  t = await startTestServer(
    { LOGIN_FAILURES_PER_ACCOUNT: '3', LOGIN_FAILURES_PER_IP: '8', TRUST_PROXY: 'true' },
    {
      now: clock.now,
      mailer: {
        sendVerification: async (to, token) => {
          verifications.set(to, token)
        },
        sendPasswordReset: async (to, token) => {
          resets.set(to, [...(resets.get(to) ?? []), token])
        },
      },
    },
  )
}, TIMEOUT)
afterAll(() => t?.stop(), TIMEOUT)

let ipSeq = 1
/** Each test asks from an address of its own: the per-address window is its own business. */
const freshIp = () => ({ 'x-forwarded-for': `198.51.100.${ipSeq++}` })
const forgot = (email: string, headers: Record<string, string> = freshIp()) =>
  t.json('/api/auth/forgot', { method: 'POST', ...jsonBody({ email }, headers) })
const reset = (token: string, newPassword: string) =>
  t.json('/api/auth/reset', { method: 'POST', ...jsonBody({ token, newPassword }) })
const me = (token: string) => t.json('/api/auth/me', { headers: { authorization: `Bearer ${token}` } })
const login = (username: string, password: string) =>
  t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username, password }) })
const lastReset = (email: string) => resets.get(email)?.at(-1)

function expectError(res: { status: number; body: any }, status: number) {
  expect(res.status).toBe(status)
  expect(typeof res.body.error).toBe('string')
}

describe('POST /api/auth/forgot', () => {
  test('the same answer for a known and an unknown address; only the known one gets a token', async () => {
    const account = await registerUser(t)
    const known = await forgot(account.user.email)
    const unknown = await forgot(`nobody${Date.now()}@example.com`)
    expect(known.status).toBe(200)
    expect(unknown.status).toBe(200)
    expect(unknown.body).toEqual(known.body)
    expect(known.body).toEqual({ success: true })
    expect(resets.get(account.user.email)?.length).toBe(1)
    expect(resets.size).toBeGreaterThan(0)
    expect([...resets.keys()].some((to) => to.startsWith('nobody'))).toBe(false)
    // The address in any case finds the account.
    expect((await forgot(account.user.email.toUpperCase())).status).toBe(200)
    expect(resets.get(account.user.email)?.length).toBe(2)
  })

  test('throttled per email: past the window, 429 for known and unknown addresses alike', async () => {
    const account = await registerUser(t)
    const unknown = `ghost${Date.now()}@example.com`
    for (let i = 0; i < 3; i++) {
      expect((await forgot(account.user.email)).status).toBe(200)
      expect((await forgot(unknown)).status).toBe(200)
    }
    const known = await forgot(account.user.email)
    const ghost = await forgot(unknown)
    expectError(known, 429)
    expectError(ghost, 429)
    expect(ghost.body).toEqual(known.body)
    expect(resets.get(account.user.email)?.length).toBe(3)
    // A new window: allowed again.
    clock.set(Date.now() + 16 * 60_000)
    try {
      expect((await forgot(account.user.email)).status).toBe(200)
    } finally {
      clock.reset()
    }
  })

  test('throttled per address, whatever the email', async () => {
    const from = freshIp()
    for (let i = 0; i < 8; i++) expect((await forgot(`many${i}.${Date.now()}@example.com`, from)).status).toBe(200)
    expectError(await forgot(`one-more${Date.now()}@example.com`, from), 429)
    expect((await forgot(`one-more${Date.now()}@example.com`)).status).toBe(200)
  })

  test('a missing or oversized email: 400', async () => {
    expectError(await t.json('/api/auth/forgot', { method: 'POST', ...jsonBody({}) }), 400)
    expectError(await forgot(`${'a'.repeat(250)}@example.com`), 400)
  })
})

describe('POST /api/auth/reset', () => {
  test('sets the password, ends every session; the token works once', async () => {
    const account = await registerUser(t)
    const second = (await login(account.user.username, account.password)).body.token
    expect((await me(second)).status).toBe(200)
    expect((await me(account.token)).status).toBe(200)
    await forgot(account.user.email)
    const token = lastReset(account.user.email)!
    const res = await reset(token, 'a whole new password')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expectError(await me(account.token), 401)
    expectError(await me(second), 401)
    expectError(await login(account.user.username, account.password), 401)
    const fresh = await login(account.user.username, 'a whole new password')
    expect(fresh.status).toBe(200)
    // Single use.
    expectError(await reset(token, 'yet another password'), 400)
    expect((await me(fresh.body.token)).status).toBe(200)
  })

  test('valid for 1 hour: a token used one millisecond before works, one at the hour does not', async () => {
    const account = await registerUser(t)
    const start = Date.now()
    clock.set(start)
    try {
      await forgot(account.user.email)
      const early = lastReset(account.user.email)!
      await forgot(account.user.email)
      const late = lastReset(account.user.email)!
      clock.set(start + HOUR_MS)
      expectError(await reset(late, 'too late for this'), 400)
      clock.set(start + HOUR_MS - 1)
      expect((await reset(early, 'just in time!')).status).toBe(200)
    } finally {
      clock.reset()
    }
    expect((await login(account.user.username, 'just in time!')).status).toBe(200)
  })

  test('a new password outside the rules: 400, and the token is not spent', async () => {
    const account = await registerUser(t)
    await forgot(account.user.email)
    const token = lastReset(account.user.email)!
    expectError(await reset(token, 'short'), 400)
    expect((await me(account.token)).status).toBe(200)
    expect((await reset(token, 'long enough now')).status).toBe(200)
  })

  test('unknown tokens, and tokens of the other kind, are refused both ways', async () => {
    const account = await registerUser(t)
    expectError(await reset('not-a-token', 'whatever password'), 400)
    // The verification token does not reset a password...
    expectError(await reset(verifications.get(account.user.email)!, 'whatever password'), 400)
    // ...and a reset token does not verify an address.
    await forgot(account.user.email)
    const verify = await t.json('/api/auth/verify-email', {
      method: 'POST',
      ...jsonBody({ token: lastReset(account.user.email) }),
    })
    expectError(verify, 400)
    expect((await me(account.token)).body.user.emailVerified).toBe(false)
    expect((await login(account.user.username, account.password)).status).toBe(200)
  })
})

describe('without SMTP', () => {
  test('the reset token goes to the server log, as the verification token does', async () => {
    const plain = await startTestServer()
    const spy = spyOn(console, 'log')
    try {
      const account = await registerUser(plain)
      await plain.json('/api/auth/forgot', { method: 'POST', ...jsonBody({ email: account.user.email }) })
      const lines = spy.mock.calls.map((args) => args.map(String).join(' '))
      const token = lines.flatMap((line) =>
        [...line.matchAll(/password reset token: ([A-Za-z0-9_-]+)/g)].map((m) => m[1]),
      )
      expect(token.length).toBe(1)
      const res = await plain.json('/api/auth/reset', {
        method: 'POST',
        ...jsonBody({ token: token[0], newPassword: 'from the log!' }),
      })
      expect(res.status).toBe(200)
    } finally {
      spy.mockRestore()
      await plain.stop()
    }
  })
})
