import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Secret, TOTP } from 'otpauth'
import type { Browser, Page } from 'playwright-core'
import { addVirtualAuthenticator, launchBrowser } from '../browser'
import { jsonBody, registerUser, startTestServer, type TestServer } from '../helpers'
import { expectClean, openPage, type WebPage } from '../web/support'

// A passkey in place of the TOTP code at password login: the 401 that asks for the second factor carries options
// for the account's passkeys, and a real Chromium (CDP virtual authenticator) answers them. Two-factor is on when TOTP
// is on; passkeys alone do not turn it on.
setDefaultTimeout(60_000)

const STEP_MS = 30_000
const WINDOW_SECONDS = 900
let clock = Date.UTC(2030, 0, 1)
let t: TestServer
let browser: Browser
let p: WebPage
let page: Page
let authenticator: Awaited<ReturnType<typeof addVirtualAuthenticator>>

beforeAll(async () => {
  t = await startTestServer(
    { LOGIN_FAILURES_PER_ACCOUNT: '3', PASSWORD_FAILURES_WINDOW_SECONDS: String(WINDOW_SECONDS) },
    { now: () => clock },
  )
  browser = await launchBrowser()
  p = await openPage(browser, t, '/login')
  page = p.page
  authenticator = await addVirtualAuthenticator(p.context, page)
})
// The virtual authenticator holds only a few discoverable credentials: each test's go.
afterEach(() => authenticator.cdp.send('WebAuthn.clearCredentials', { authenticatorId: authenticator.authenticatorId }))
afterAll(async () => {
  await p?.close()
  await browser?.close()
  await t?.stop()
})

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  t.json(path, { method: 'POST', ...jsonBody(body, headers) })
/** The browser's answer to options from the server (through the site's own passkeys.js). */
const browserCreate = (options: unknown) => page.evaluate((o) => (window as any).imghost.passkeys.create(o), options)
const browserGet = (options: unknown) => page.evaluate((o) => (window as any).imghost.passkeys.get(o), options)
const codeAt = (secret: string) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: clock,
  })

/** A fresh account with, as asked, a passkey (made by the browser) and TOTP (turned on with a code from its secret). */
async function account(opts: { passkey: boolean; totp: boolean }) {
  const user = await registerUser(t)
  if (opts.passkey) {
    const options = await post('/api/auth/passkeys/register/options', {}, user.bearer)
    const response = await browserCreate(options.body.options)
    expect((await post('/api/auth/passkeys/register', { response }, user.bearer)).status).toBe(201)
  }
  let secret = ''
  if (opts.totp) {
    secret = (await post('/api/auth/totp/setup', {}, user.bearer)).body.secret
    expect((await post('/api/auth/totp/enable', { code: codeAt(secret) }, user.bearer)).status).toBe(200)
    clock += STEP_MS
  }
  const login = (extra: Record<string, unknown> = {}) =>
    post('/api/auth/login', { username: user.user.username, password: user.password, ...extra })
  /** The 401 of the password alone, which asks for the second factor. */
  const asked = async () => {
    const res = await login()
    expect(res.status).toBe(401)
    expect(res.body.twoFactor).toBe('totp')
    expect(res.body.token).toBeUndefined()
    return res.body
  }
  return { ...user, secret, login, asked }
}

describe('a passkey as the second factor at password login', () => {
  test('the password alone: 401 with passkeyOptions; their answer logs in, once', async () => {
    const alice = await account({ passkey: true, totp: true })
    const asked = await alice.asked()
    // Limited to the account's passkey, which the browser then uses without a username.
    expect(asked.passkeyOptions.allowCredentials).toHaveLength(1)
    expect(asked.passkeyOptions.challenge).toEqual(expect.any(String))
    const passkey = await browserGet(asked.passkeyOptions)

    const res = await alice.login({ passkey })
    expect(res.status).toBe(200)
    expect(res.body.user.username).toBe(alice.user.username)
    const me = await t.json('/api/auth/me', { headers: { authorization: `Bearer ${res.body.token}` } })
    expect(me.status).toBe(200)
    expect(me.body.user.username).toBe(alice.user.username)

    // The same answer again: its challenge is used up. The 401 asks again, with a new challenge.
    const replay = await alice.login({ passkey })
    expect(replay.status).toBe(401)
    expect(replay.body.error).toContain('challenge is unknown, used or expired')
    expect(replay.body.token).toBeUndefined()
    expect(replay.body.twoFactor).toBe('totp')
    expect(replay.body.passkeyOptions.challenge).not.toBe(asked.passkeyOptions.challenge)
    // The code still works as before.
    expect((await alice.login({ code: codeAt(alice.secret) })).status).toBe(200)
  })

  test('another account’s answer, or another account’s passkey, is a 401', async () => {
    const alice = await account({ passkey: true, totp: true })
    const bob = await account({ passkey: true, totp: true })
    // Bob's challenge, signed with Bob's passkey, sent in Alice's login: the challenge was made for Bob.
    const forBob = await browserGet((await bob.asked()).passkeyOptions)
    const refused = await alice.login({ passkey: forBob })
    expect(refused.status).toBe(401)
    expect(refused.body.token).toBeUndefined()
    expect(refused.body.error).toContain('challenge')
    // Alice's challenge, signed with Bob's passkey: not one of hers.
    const aliceOptions = (await alice.asked()).passkeyOptions
    const bobOptions = (await bob.asked()).passkeyOptions
    const signedByBob = await browserGet({ ...aliceOptions, allowCredentials: bobOptions.allowCredentials })
    const wrongKey = await alice.login({ passkey: signedByBob })
    expect(wrongKey.status).toBe(401)
    expect(wrongKey.body.error).toBe('This passkey is not registered here')
    expect(wrongKey.body.token).toBeUndefined()
    // Malformed answers: the schema's 400, nothing else.
    expect((await alice.login({ passkey: { id: 'x' } })).status).toBe(400)
  })

  test('TOTP without passkeys: no passkeyOptions; passkeys without TOTP: no second factor', async () => {
    const carol = await account({ passkey: false, totp: true })
    expect(await carol.asked()).toEqual({ error: 'Two-factor code required', twoFactor: 'totp' })
    const dave = await account({ passkey: true, totp: false })
    const plain = await dave.login()
    expect(plain.status).toBe(200)
    expect(plain.body.token).toEqual(expect.any(String))
  })

  test('wrong passkeys count in the account’s two-factor window with wrong codes (429), until it ends', async () => {
    const erin = await account({ passkey: true, totp: true })
    const used = await browserGet((await erin.asked()).passkeyOptions)
    expect((await erin.login({ passkey: used })).status).toBe(200)
    // Three wrong tries (the limit): two codes and the used answer again.
    expect((await erin.login({ code: '000000' })).status).toBe(401)
    expect((await erin.login({ code: '000000' })).status).toBe(401)
    const last = await erin.login({ passkey: used })
    expect(last.status).toBe(401)
    // Then even a right passkey is refused until the window ends.
    const limited = await erin.login({ passkey: await browserGet(last.body.passkeyOptions) })
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBeTruthy()
    clock += WINDOW_SECONDS * 1000
    expect((await erin.login({ passkey: await browserGet((await erin.asked()).passkeyOptions) })).status).toBe(200)
  })

  test('the login page: at the code step, “Use a passkey instead” signs in with the passkey', async () => {
    const frank = await account({ passkey: true, totp: true })
    const gina = await account({ passkey: false, totp: true })
    const submitPassword = async (who: typeof frank) => {
      await page.goto(`${t.url}/login`)
      await page.fill('#login-username', who.user.username)
      await page.fill('#login-password', who.password)
      await page.click('#login-form button[type="submit"]')
      await page.waitForSelector('#login-totp:not([hidden])')
    }
    // Without passkeys, the code step offers none.
    await submitPassword(gina)
    expect(await page.isVisible('#login-second-passkey')).toBe(false)
    expect(await page.textContent('#login-form [data-form-error]')).toBe('Enter the code from your authenticator app.')

    await submitPassword(frank)
    expect(await page.isVisible('#login-second-passkey')).toBe(true)
    expect(await page.textContent('#login-form [data-form-error]')).toBe(
      'Enter the code from your authenticator app, or use a passkey.',
    )
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/api/auth/login') && r.postDataJSON()?.passkey !== undefined),
      page.waitForURL('**/dashboard'),
      page.click('#login-second-passkey'),
    ])
    expect(request.postDataJSON()).toMatchObject({ username: frank.user.username, password: frank.password })
    const token = await page.evaluate(() => localStorage.getItem('imghost.token'))
    const me = await t.json('/api/auth/me', { headers: { authorization: `Bearer ${token}` } })
    expect(me.body.user.username).toBe(frank.user.username)
    // The 401 that asked for the second factor is the only console error.
    expectClean(p, [/401/])
  })

  test('OpenAPI documents the `passkey` body field and the 401’s `twoFactor` and `passkeyOptions`', async () => {
    const login = (await t.json('/swagger/json')).body.paths['/api/auth/login'].post
    const body = login.requestBody.content['application/json'].schema
    expect(body.properties.passkey.properties.response.required).toContain('signature')
    expect(body.required).not.toContain('passkey')
    const refused = login.responses['401'].content['application/json'].schema
    expect(Object.keys(refused.properties)).toEqual(['error', 'twoFactor', 'passkeyOptions'])
    expect(refused.properties.twoFactor.const).toBe('totp')
  })
})
