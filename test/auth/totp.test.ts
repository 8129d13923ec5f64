import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { engine } from '../../src/db/engine'
import { totpSecrets } from '../../src/db/schema'
import { seal } from '../../src/lib/crypto'
import { jsonBody, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'

/** Two-factor (TOTP): codes are computed here from the secret the API hands out, at the server's clock (stepped). */

const STEP_MS = 30_000
const WINDOW_SECONDS = 900
let clock = Date.UTC(2030, 0, 1)
let t: TestServer

beforeAll(async () => {
  t = await startTestServer(
    { LOGIN_FAILURES_PER_ACCOUNT: '3', PASSWORD_FAILURES_WINDOW_SECONDS: String(WINDOW_SECONDS) },
    { now: () => clock },
  )
})
afterAll(() => t.stop())

const codeAt = (secret: string, at = clock) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: at })

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  t.json(path, { method: 'POST', ...jsonBody(body, headers) })

const login = (username: string, password: string, code?: string) =>
  post('/api/auth/login', code === undefined ? { username, password } : { username, password, code })

/** A fresh account with TOTP on: its secret, recovery codes, and the clock moved past the step that enabled it. */
async function withTotp() {
  const account = await registerUser(t)
  const setup = await post('/api/auth/totp/setup', {}, account.bearer)
  expect(setup.status).toBe(200)
  const enabled = await post('/api/auth/totp/enable', { code: codeAt(setup.body.secret) }, account.bearer)
  expect(enabled.status).toBe(200)
  clock += STEP_MS
  return { ...account, secret: setup.body.secret as string, recovery: enabled.body.recoveryCodes as string[] }
}

describe('setting up two-factor', () => {
  test('setup answers a secret, its otpauth URL and a QR code made here; login is unchanged until enabled', async () => {
    const account = await registerUser(t)
    const setup = await post('/api/auth/totp/setup', {}, account.bearer)
    expect(setup.status).toBe(200)
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/)
    const url = new URL(setup.body.otpauthUrl)
    expect(url.protocol).toBe('otpauth:')
    expect(url.searchParams.get('secret')).toBe(setup.body.secret)
    expect(decodeURIComponent(url.pathname)).toContain(account.user.username)
    expect(setup.body.qrCode).toStartWith('data:image/svg+xml;base64,')
    expect(Buffer.from(setup.body.qrCode.split(',')[1], 'base64').toString()).toContain('<svg')

    const status = await t.json('/api/auth/totp', { headers: account.bearer })
    expect(status.body).toEqual({ success: true, enabled: false, recoveryCodesLeft: 0 })
    const plain = await login(account.user.username, account.password)
    expect(plain.status).toBe(200)
    expect(plain.body.twoFactor).toBeUndefined()
  })

  test('enable refuses a wrong code (400) and nothing changes; a right one answers ten distinct recovery codes', async () => {
    const account = await registerUser(t)
    expect((await post('/api/auth/totp/enable', { code: '123456' }, account.bearer)).status).toBe(400)
    const setup = await post('/api/auth/totp/setup', {}, account.bearer)
    const wrong = String((Number(codeAt(setup.body.secret)) + 1) % 1_000_000).padStart(6, '0')
    const refused = await post('/api/auth/totp/enable', { code: wrong }, account.bearer)
    expect(refused.status).toBe(400)
    expect(refused.body.error).toContain('Invalid code')
    expect((await login(account.user.username, account.password)).status).toBe(200)

    const enabled = await post('/api/auth/totp/enable', { code: codeAt(setup.body.secret) }, account.bearer)
    expect(enabled.status).toBe(200)
    expect(enabled.body.recoveryCodes).toHaveLength(10)
    expect(new Set(enabled.body.recoveryCodes).size).toBe(10)
    const status = await t.json('/api/auth/totp', { headers: account.bearer })
    expect(status.body).toEqual({ success: true, enabled: true, recoveryCodesLeft: 10 })
    // A second setup would replace the secret of an account that has two-factor on.
    expect((await post('/api/auth/totp/setup', {}, account.bearer)).status).toBe(409)
  })

  test('the secret is sealed at rest: the database does not hold it', async () => {
    const account = await withTotp()
    const [row] = await t.server.db
      .select({ secret: totpSecrets.secret })
      .from(totpSecrets)
      .where(eq(totpSecrets.userId, account.user.id))
    expect(row.secret).not.toContain(account.secret)
    expect(row.secret.length).toBeGreaterThan(account.secret.length)
  })

  test('the key is generated into the data directory (owner only); under another key codes fail but recovery codes work', async () => {
    // Generated on SQLite only: with DATABASE_URL, TOTP_KEY is required (config.ts) and the test run gives one.
    if (engine !== 'pg') expect(statSync(join(t.dataDir, 'totp-key')).mode & 0o777).toBe(0o600)
    const account = await withTotp()
    // As if TOTP_KEY had changed: the secret is sealed under a key the server does not have.
    await t.server.db
      .update(totpSecrets)
      .set({ secret: seal('another key', account.secret) })
      .where(eq(totpSecrets.userId, account.user.id))
    const name = account.user.username
    const refused = await login(name, account.password, codeAt(account.secret))
    expect(refused.status).toBe(401)
    expect((await login(name, account.password, account.recovery[0])).status).toBe(200)
  })
})

describe('logging in with two-factor on', () => {
  test('no code: 401 twoFactor "totp" and no token; a wrong code 401; the current code the token', async () => {
    const account = await withTotp()
    const name = account.user.username
    const asked = await login(name, account.password)
    expect(asked.status).toBe(401)
    expect(asked.body).toEqual({ error: 'Two-factor code required', twoFactor: 'totp' })
    const wrong = String((Number(codeAt(account.secret)) + 1) % 1_000_000).padStart(6, '0')
    const refused = await login(name, account.password, wrong)
    expect(refused.status).toBe(401)
    expect(refused.body.token).toBeUndefined()
    // A right code does not stand in for a wrong password.
    expect((await login(name, 'wrong password!', codeAt(account.secret))).status).toBe(401)

    const ok = await login(name, account.password, codeAt(account.secret))
    expect(ok.status).toBe(200)
    expect(ok.body.user.id).toBe(account.user.id)
    expect((await t.json('/api/auth/me', { headers: { authorization: `Bearer ${ok.body.token}` } })).status).toBe(200)
  })

  test('a code is accepted once: replayed in its window (or the code that enabled it) it is refused', async () => {
    const account = await registerUser(t)
    const setup = await post('/api/auth/totp/setup', {}, account.bearer)
    const first = codeAt(setup.body.secret)
    await post('/api/auth/totp/enable', { code: first }, account.bearer)
    const name = account.user.username
    expect((await login(name, account.password, first)).status).toBe(401)

    clock += STEP_MS
    const code = codeAt(setup.body.secret)
    expect((await login(name, account.password, code)).status).toBe(200)
    const replay = await login(name, account.password, code)
    expect(replay.status).toBe(401)
    expect(replay.body.error).toBe('Invalid or already used two-factor code')
    // Still within the drift window a step later, but used: refused too.
    clock += STEP_MS
    expect((await login(name, account.password, code)).status).toBe(401)
    expect((await login(name, account.password, codeAt(setup.body.secret))).status).toBe(200)
  })

  test('recovery codes work once each, in any case and with or without the dash', async () => {
    const account = await withTotp()
    const name = account.user.username
    const [a, b] = account.recovery
    expect(a).toMatch(/^[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}$/)
    expect((await login(name, account.password, a)).status).toBe(200)
    expect((await login(name, account.password, a)).status).toBe(401)
    expect((await login(name, account.password, b.replaceAll('-', '').toUpperCase())).status).toBe(200)
    const status = await t.json('/api/auth/totp', { headers: account.bearer })
    expect(status.body.recoveryCodesLeft).toBe(8)
    // Another account's recovery code is no code of this one.
    const other = await withTotp()
    expect((await login(name, account.password, other.recovery[0])).status).toBe(401)
  })

  test('wrong codes are throttled per account (429), a right code included, until the window ends', async () => {
    const account = await withTotp()
    const name = account.user.username
    for (let i = 0; i < 3; i++) expect((await login(name, account.password, '000000')).status).toBe(401)
    const limited = await login(name, account.password, codeAt(account.secret))
    expect(limited.status).toBe(429)
    expect(limited.body.error).toContain('Too many wrong two-factor codes')
    expect(limited.headers.get('retry-after')).toBeTruthy()
    // Recovery codes count against the same window.
    expect((await login(name, account.password, account.recovery[0])).status).toBe(429)
    // Another account is not affected.
    const other = await withTotp()
    expect((await login(other.user.username, other.password, codeAt(other.secret))).status).toBe(200)

    clock += WINDOW_SECONDS * 1000
    expect((await login(name, account.password, codeAt(account.secret))).status).toBe(200)
  })

  test('API keys are unaffected: the machine credential needs no code', async () => {
    const account = await userWithKey(t)
    const setup = await post('/api/auth/totp/setup', {}, account.bearer)
    await post('/api/auth/totp/enable', { code: codeAt(setup.body.secret) }, account.bearer)
    expect((await t.json('/api/v1/me', { headers: account.keyHeader })).status).toBe(200)
  })
})

describe('turning two-factor off', () => {
  test('needs a right code (wrong: 400, still on); then login asks for none', async () => {
    const account = await withTotp()
    const name = account.user.username
    expect((await post('/api/auth/totp/disable', { code: '000000' }, account.bearer)).status).toBe(400)
    expect((await login(name, account.password)).status).toBe(401)
    const off = await post('/api/auth/totp/disable', { code: codeAt(account.secret) }, account.bearer)
    expect(off.status).toBe(200)
    const plain = await login(name, account.password)
    expect(plain.status).toBe(200)
    expect((await t.json('/api/auth/totp', { headers: account.bearer })).body.enabled).toBe(false)
    expect((await post('/api/auth/totp/disable', { code: codeAt(account.secret) }, account.bearer)).status).toBe(400)
  })

  test('wrong codes at enable and disable count against the same window (a stolen session cannot guess its way)', async () => {
    const account = await withTotp()
    for (let i = 0; i < 3; i++)
      expect((await post('/api/auth/totp/disable', { code: '000000' }, account.bearer)).status).toBe(400)
    const limited = await post('/api/auth/totp/disable', { code: codeAt(account.secret) }, account.bearer)
    expect(limited.status).toBe(429)
    expect((await login(account.user.username, account.password, codeAt(account.secret))).status).toBe(429)
    clock += WINDOW_SECONDS * 1000

    const fresh = await registerUser(t)
    const setup = await post('/api/auth/totp/setup', {}, fresh.bearer)
    for (let i = 0; i < 3; i++)
      expect((await post('/api/auth/totp/enable', { code: '000000' }, fresh.bearer)).status).toBe(400)
    expect((await post('/api/auth/totp/enable', { code: codeAt(setup.body.secret) }, fresh.bearer)).status).toBe(429)
  })

  test('a recovery code turns it off too (a lost device)', async () => {
    const account = await withTotp()
    expect((await post('/api/auth/totp/disable', { code: account.recovery[3] }, account.bearer)).status).toBe(200)
    expect((await login(account.user.username, account.password)).status).toBe(200)
  })

  test('the routes need a session, and a code is bounded', async () => {
    expect((await post('/api/auth/totp/setup', {})).status).toBe(401)
    const account = await registerUser(t)
    const long = await post('/api/auth/totp/enable', { code: '1'.repeat(65) }, account.bearer)
    expect(long.status).toBe(400)
    expect((await login(account.user.username, account.password, '')).status).toBe(400)
  })
})
