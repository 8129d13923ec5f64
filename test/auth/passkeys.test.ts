import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Browser, CDPSession, Page } from 'playwright-core'
import { MAX_PASSKEYS } from '../../src/modules/auth/model'
import { CHALLENGE_TTL_MS, MAX_PENDING_CHALLENGES } from '../../src/modules/auth/passkeys'
import { addVirtualAuthenticator, launchBrowser, newIsolatedPage } from '../browser'
import { jsonBody, registerUser, startTestServer, type TestServer, testClock } from '../helpers'
import { expectClean, openPage, shoot, type WebPage } from '../web/support'

// Passkeys end to end: a real Chromium with a CDP virtual authenticator (a platform authenticator with user
// verification, holding discoverable credentials) against the real server, whose PUBLIC_URL is its own address.
setDefaultTimeout(60_000)

const clock = testClock()
let t: TestServer
let browser: Browser
let p: WebPage
let page: Page
let cdp: CDPSession
let authenticatorId = ''
let alice: Awaited<ReturnType<typeof registerUser>>

beforeAll(async () => {
  // startTestServer's address is http://localhost:<port>, which is also PUBLIC_URL's default: the RP id is localhost.
  t = await startTestServer(
    { SITE_NAME: 'Pixbin' },
    { now: clock.now, mailer: { sendVerification: async () => {}, sendPasswordReset: async () => {} } },
  )
  browser = await launchBrowser()
  alice = await registerUser(t, 'alice')
  p = await openPage(browser, t, '/login')
  page = p.page
  page.on('dialog', (dialog) => dialog.accept())
  ;({ cdp, authenticatorId } = await addVirtualAuthenticator(p.context, page))
})
afterAll(async () => {
  await p?.close()
  await browser?.close()
  await t?.stop()
})

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const storedToken = () => page.evaluate(() => localStorage.getItem('imghost.token'))
const logOut = () => page.evaluate(() => localStorage.clear())
const listPasskeys = async (token: string) => {
  const res = await t.json('/api/auth/passkeys', { headers: bearer(token) })
  expect(res.status).toBe(200)
  return res.body.passkeys as { id: number; name: string; transports: string[]; lastUsedAt: string | null }[]
}
/** The browser's answer to options from the server (through the site's own passkeys.js, on a page of the site). */
const browserCreate = (options: unknown) => page.evaluate((o) => (window as any).imghost.passkeys.create(o), options)
const browserGet = (options: unknown) => page.evaluate((o) => (window as any).imghost.passkeys.get(o), options)
const loginOptions = async () => {
  const res = await t.json('/api/auth/passkeys/login/options', { method: 'POST' })
  expect(res.status).toBe(200)
  return res.body.options
}
const passkeyLogin = (response: unknown) =>
  t.json('/api/auth/passkeys/login', { method: 'POST', ...jsonBody({ response }) })
/** The credentials the authenticator holds now. */
const heldCredentials = async () =>
  (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials.map((c) => c.credentialId)
/**
 * Removes from the authenticator every credential not in `keep`: credentials the server refused or that a test made
 * only to send stay out of the sign-ins that follow (and out of the authenticator's limited storage).
 */
async function forgetAllBut(keep: string[]) {
  for (const credentialId of await heldCredentials())
    if (!keep.includes(credentialId)) await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId })
}
/** Opens the dashboard's Security tab with the token stored, as after a login. */
async function openSecurity(token: string) {
  await page.goto(`${t.url}/login`)
  await page.evaluate((jwt) => localStorage.setItem('imghost.token', jwt), token)
  await page.goto(`${t.url}/dashboard#security`)
  await page.waitForSelector('[data-panel="security"]:not([hidden])')
  await page.waitForSelector('#passkey-list li')
}

describe('passkeys in the browser', () => {
  let aliceKeyId = 0

  test('registered from the dashboard’s Security tab, listed there and by the API', async () => {
    await openSecurity(alice.token)
    expect(await page.textContent('#passkey-list')).toContain('No passkeys yet')
    // The containers the sessions and two-factor sections fill are there, empty.
    expect(await page.locator('#security-sessions').count()).toBe(1)
    expect(await page.locator('#security-totp').count()).toBe(1)
    await page.fill('#passkey-name', 'Laptop <b>')
    await page.click('#passkey-create button[type="submit"]')
    await page.waitForSelector('#passkey-list [data-passkey]')
    // The name is shown as text, never as markup.
    expect(await page.textContent('#passkey-list .row-title')).toBe('Laptop <b>')
    expect(await page.locator('#passkey-list b').count()).toBe(0)
    expect(await page.textContent('#passkeys-status')).toContain('Added')
    await shoot(page, 'dashboard-security')
    const listed = await listPasskeys(alice.token)
    expect(listed).toHaveLength(1)
    expect(listed[0]).toMatchObject({ name: 'Laptop <b>', transports: ['internal'], lastUsedAt: null })
    aliceKeyId = listed[0].id
    // The authenticator holds it as a discoverable credential (the sign-in needs no username).
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
    expect(credentials).toHaveLength(1)
    expect(credentials[0].isResidentCredential).toBe(true)
    expectClean(p)
  })

  test('the same authenticator is refused a second passkey for the account (excluded by the options)', async () => {
    await page.click('#passkey-create button[type="submit"]')
    await page.waitForSelector('#passkey-create [data-form-error]:not([hidden])')
    expect(await page.textContent('#passkey-create [data-form-error]')).toContain('already holds a passkey')
    expect(await listPasskeys(alice.token)).toHaveLength(1)
  })

  test('logged out, the login page’s passkey button signs in (no username) and opens the dashboard', async () => {
    await logOut()
    await page.goto(`${t.url}/login`)
    expect(await page.isVisible('#passkey-button')).toBe(true)
    await shoot(page, 'login-passkey')
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/api/auth/passkeys/login') && r.method() === 'POST'),
      page.waitForURL('**/dashboard'),
      page.click('#passkey-button'),
    ])
    await page.waitForFunction(() => document.getElementById('dash-user')!.textContent!.includes('Logged in as'))
    expect(await page.textContent('#dash-user')).toContain('alice')
    const token = (await storedToken())!
    expect((await t.json('/api/auth/me', { headers: bearer(token) })).body.user.username).toBe('alice')
    expect((await listPasskeys(alice.token))[0].lastUsedAt).not.toBeNull()
    expectClean(p)

    // The same signed answer sent again: its challenge was used up by the sign-in.
    const replay = await t.json('/api/auth/passkeys/login', {
      method: 'POST',
      body: request.postData()!,
      headers: { 'content-type': 'application/json' },
    })
    expect(replay.status).toBe(401)
    expect(replay.body.error).toContain('challenge is unknown, used or expired')
    expect(replay.body.token).toBeUndefined()
  })

  test('a challenge answers until its last millisecond, not after', async () => {
    const start = Date.now()
    clock.set(start)
    const fresh = await browserGet(await loginOptions())
    clock.set(start + CHALLENGE_TTL_MS - 1)
    const inTime = await passkeyLogin(fresh)
    expect(inTime.status).toBe(200)
    expect(inTime.body.user.username).toBe('alice')

    clock.set(start)
    const late = await browserGet(await loginOptions())
    clock.set(start + CHALLENGE_TTL_MS)
    const refused = await passkeyLogin(late)
    expect(refused.status).toBe(401)
    expect(refused.body.error).toContain('expired')
    clock.reset()
  })

  test('a registration challenge is bound to its account and to registering', async () => {
    const bob = await registerUser(t, 'bob')
    const held = await heldCredentials()
    try {
      // Bob's registration options answered by the browser, sent in by Alice: refused, nothing stored.
      const options = await t.json('/api/auth/passkeys/register/options', { method: 'POST', headers: bob.bearer })
      expect(options.status).toBe(200)
      const response = await browserCreate(options.body.options)
      const asAlice = await t.json('/api/auth/passkeys/register', {
        method: 'POST',
        ...jsonBody({ response }, alice.bearer),
      })
      expect(asAlice.status).toBe(400)
      expect(asAlice.body.error).toContain('challenge')
      // And the challenge is gone for Bob too: single use.
      const asBob = await t.json('/api/auth/passkeys/register', {
        method: 'POST',
        ...jsonBody({ response }, bob.bearer),
      })
      expect(asBob.status).toBe(400)
      expect(await listPasskeys(bob.token)).toEqual([])
      expect(await listPasskeys(alice.token)).toHaveLength(1)
      // A sign-in challenge is no registration challenge.
      const fresh = await t.json('/api/auth/passkeys/register/options', { method: 'POST', headers: bob.bearer })
      const fromLogin = await browserCreate({ ...fresh.body.options, challenge: (await loginOptions()).challenge })
      const wrongCeremony = await t.json('/api/auth/passkeys/register', {
        method: 'POST',
        ...jsonBody({ response: fromLogin }, bob.bearer),
      })
      expect(wrongCeremony.status).toBe(400)
      expect(await listPasskeys(bob.token)).toEqual([])
    } finally {
      // The refused credentials stay in the authenticator: it forgets them, so only Alice's is offered at sign-in.
      await forgetAllBut(held)
    }
  })

  test('as a second factor: verifySecondFactor accepts the account’s own passkey only, once', async () => {
    const passkeys = t.server.services.passkeys
    const account = (await t.server.services.auth.findById(alice.user.id))!
    const options = (await passkeys.secondFactorOptions(account))!
    expect(options.allowCredentials?.map((c) => c.transports)).toEqual([['internal']])
    const response = await browserGet(options)
    await passkeys.verifySecondFactor(account, response)
    // The same answer again: used up.
    await expect(passkeys.verifySecondFactor(account, response)).rejects.toThrow('challenge')
    // A sign-in challenge, or her registration challenge, is no second-factor challenge.
    const signIn = await browserGet(await loginOptions())
    await expect(passkeys.verifySecondFactor(account, signIn)).rejects.toThrow('challenge')
    const registering = await passkeys.registrationOptions(account)
    const withRegistration = await browserGet({ ...options, challenge: registering.challenge })
    await expect(passkeys.verifySecondFactor(account, withRegistration)).rejects.toThrow('challenge')
    // Nor is her second-factor challenge a registration challenge.
    const second = (await passkeys.secondFactorOptions(account))!
    const stray = await heldCredentials()
    try {
      const made = await browserCreate({ ...registering, excludeCredentials: [], challenge: second.challenge })
      const res = await t.json('/api/auth/passkeys/register', {
        method: 'POST',
        ...jsonBody({ response: made }, alice.bearer),
      })
      expect(res.status).toBe(400)

      // Another account cannot pass with Alice's passkey, nor with a challenge made for her.
      const bobAccount = await registerUser(t, 'bob2')
      const bob = (await t.server.services.auth.findById(bobAccount.user.id))!
      expect(await passkeys.secondFactorOptions(bob)).toBeNull()
      const forAlice = await browserGet(await passkeys.secondFactorOptions(account))
      await expect(passkeys.verifySecondFactor(bob, forAlice)).rejects.toThrow('challenge')
      // Bob with a passkey of his own: his challenge signed with Alice's passkey is refused.
      const bobOptions = await passkeys.registrationOptions(bob)
      await passkeys.register(bob, await browserCreate(bobOptions), 'Bob’s')
      const signedByAlice = await browserGet({
        ...(await passkeys.secondFactorOptions(bob)),
        allowCredentials: options.allowCredentials,
      })
      await expect(passkeys.verifySecondFactor(bob, signedByAlice)).rejects.toThrow('not registered')
      await passkeys.verifySecondFactor(bob, await browserGet(await passkeys.secondFactorOptions(bob)))
    } finally {
      // Only Alice's credential stays in the authenticator, so the sign-ins below offer hers.
      await forgetAllBut(stray)
    }
  })

  test('another account’s passkey cannot be removed (404), and stays', async () => {
    const mallory = await registerUser(t, 'mallory')
    const res = await t.json(`/api/auth/passkeys/${aliceKeyId}`, { method: 'DELETE', headers: mallory.bearer })
    expect(res.status).toBe(404)
    expect(res.body.error).toBe('Passkey not found')
    expect(await listPasskeys(alice.token)).toHaveLength(1)
    expect((await t.json(`/api/auth/passkeys/${aliceKeyId}`, { method: 'DELETE' })).status).toBe(401)
  })

  test('a banned account cannot sign in with its passkey', async () => {
    await t.server.services.admin.updateUser(alice.user.id, { banned: true })
    try {
      const res = await passkeyLogin(await browserGet(await loginOptions()))
      expect(res.status).toBe(403)
      expect(res.body.token).toBeUndefined()
    } finally {
      await t.server.services.admin.updateUser(alice.user.id, { banned: false })
      // The ban ended alice's sessions: the later tests sign in again.
      const login = await t.json('/api/auth/login', {
        method: 'POST',
        ...jsonBody({ username: alice.user.username, password: alice.password }),
      })
      expect(login.status).toBe(200)
      alice.token = login.body.token
    }
  })

  test('a copy of the passkey whose signature counter went back is refused (a cloned authenticator)', async () => {
    const [credential] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials
    expect(credential.signCount).toBeGreaterThan(1)
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId })
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credential, signCount: 0 } })
    try {
      const res = await passkeyLogin(await browserGet(await loginOptions()))
      expect(res.status).toBe(401)
      expect(res.body.error).toContain('counter')
    } finally {
      // Back to the real count, so the next sign-in is the genuine authenticator's.
      await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId })
      await cdp.send('WebAuthn.addCredential', {
        authenticatorId,
        credential: { ...credential, signCount: credential.signCount + 10 },
      })
    }
    expect((await passkeyLogin(await browserGet(await loginOptions()))).status).toBe(200)
  })

  // Ten thousand challenges issued one by one: ~20 s on a quiet machine, over a minute on a loaded one.
  test(`at most ${MAX_PENDING_CHALLENGES} challenges wait: past it the oldest is forgotten, the next one kept`, async () => {
    const passkeys = t.server.services.passkeys
    // One TTL for all: the one issued first ends first (a millisecond apart, so no two end together).
    const start = Date.now()
    clock.set(start)
    try {
      const oldest = await passkeys.loginOptions()
      clock.set(start + 1)
      const next = await passkeys.loginOptions()
      for (let i = 0; i < MAX_PENDING_CHALLENGES - 1; i++) await passkeys.loginOptions()
      const forgotten = await passkeyLogin(await browserGet(oldest))
      expect(forgotten.status).toBe(401)
      expect(forgotten.body.error).toContain('challenge')
      expect((await passkeyLogin(await browserGet(next))).status).toBe(200)
    } finally {
      // The tests after it run on the real clock, whatever happened here.
      clock.reset()
    }
  }, 300_000)

  test('removed from the dashboard, the passkey no longer signs in', async () => {
    await openSecurity(alice.token)
    await page.click(`#passkey-list [data-passkey="${aliceKeyId}"] button`)
    await page.waitForSelector('#passkey-list .empty')
    expect(await page.textContent('#passkeys-status')).toContain('Removed')
    expect(await listPasskeys(alice.token)).toEqual([])

    await logOut()
    await page.goto(`${t.url}/login`)
    // The authenticator still offers it; the server no longer knows it.
    await page.click('#passkey-button')
    await page.waitForSelector('#login-form [data-form-error]:not([hidden])')
    expect(await page.textContent('#login-form [data-form-error]')).toBe('This passkey is not registered here')
    expect(page.url()).toEndWith('/login')
    expect(await storedToken()).toBeNull()
    expectClean(p, [/401/])
  })
})

describe('a browser without WebAuthn', () => {
  test('is offered no passkey button at login, and told in the dashboard that it cannot make one', async () => {
    const other = await newIsolatedPage(browser, t.url)
    try {
      await other.context.addInitScript(() => {
        delete (window as { PublicKeyCredential?: unknown }).PublicKeyCredential
      })
      await other.page.goto(`${t.url}/login`)
      await other.page.waitForSelector('#login-form button[type="submit"]:not([disabled])')
      expect(await other.page.isVisible('#passkey-button')).toBe(false)
      const bob = await registerUser(t)
      await other.page.evaluate((jwt) => localStorage.setItem('imghost.token', jwt), bob.token)
      await other.page.goto(`${t.url}/dashboard#security`)
      await other.page.waitForSelector('#passkey-create [data-form-error]:not([hidden])')
      expect(await other.page.textContent('#passkey-create [data-form-error]')).toBe(
        'This browser cannot make passkeys.',
      )
      expect(await other.page.isDisabled('#passkey-create button[type="submit"]')).toBe(true)
      expect(other.pageErrors).toEqual([])
    } finally {
      await other.close()
    }
  })
})

describe('how many passkeys an account has', () => {
  test(`at most ${MAX_PASSKEYS}: no options past it, and options taken earlier cannot pass it`, async () => {
    const passkeys = t.server.services.passkeys
    const carol = (await t.server.services.auth.findById((await registerUser(t, 'carol')).user.id))!
    const held = await heldCredentials()
    try {
      const options = []
      for (let i = 0; i <= MAX_PASSKEYS; i++) options.push(await passkeys.registrationOptions(carol))
      const answers = []
      for (const o of options) {
        answers.push(await browserCreate(o))
        await forgetAllBut(held)
      }
      // A blank name is "Passkey".
      for (const answer of answers.slice(0, MAX_PASSKEYS)) await passkeys.register(carol, answer, '  ')
      expect((await passkeys.list(carol)).map((k) => k.name)).toEqual(Array(MAX_PASSKEYS).fill('Passkey'))
      await expect(passkeys.register(carol, answers[MAX_PASSKEYS], 'one more')).rejects.toThrow(
        `at most ${MAX_PASSKEYS} passkeys`,
      )
      await expect(passkeys.registrationOptions(carol)).rejects.toThrow(`at most ${MAX_PASSKEYS} passkeys`)
      expect(await passkeys.list(carol)).toHaveLength(MAX_PASSKEYS)
    } finally {
      await forgetAllBut(held)
    }
  })
})

describe('passkey answers the server refuses', () => {
  test('malformed answers: 400 for the wrong shape, 401 for what cannot be a signed answer; never a 500', async () => {
    const wrongShape = [{}, { response: {} }, { response: { id: 'x', type: 'public-key' } }, { response: 'x' }]
    for (const body of wrongShape) {
      const res = await t.json('/api/auth/passkeys/login', { method: 'POST', ...jsonBody(body) })
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
    }
    const fields = { id: 'abc', rawId: 'abc', type: 'public-key', clientExtensionResults: {} }
    for (const clientDataJSON of ['', 'not base64 !', Buffer.from('{"challenge":1}').toString('base64url')]) {
      const res = await passkeyLogin({
        ...fields,
        response: { clientDataJSON, authenticatorData: 'AA', signature: 'AA' },
      })
      expect(res.status).toBe(401)
    }
    const huge = await passkeyLogin({
      ...fields,
      response: { clientDataJSON: 'A'.repeat(20_000), authenticatorData: 'AA', signature: 'AA' },
    })
    expect(huge.status).toBe(400)
    // Registration needs a session, and a well-formed answer.
    expect((await t.json('/api/auth/passkeys/register/options', { method: 'POST' })).status).toBe(401)
    const user = await registerUser(t)
    const res = await t.json('/api/auth/passkeys/register', {
      method: 'POST',
      ...jsonBody(
        { response: { ...fields, response: { clientDataJSON: 'e30', attestationObject: 'AA' } } },
        user.bearer,
      ),
    })
    expect(res.status).toBe(400)
    expect(res.body.error).toContain('challenge')
  })

  test('the options name this server as the relying party, and sign-in options ask for no username', async () => {
    const options = await loginOptions()
    expect(options.rpId).toBe('localhost')
    expect(options.userVerification).toBe('required')
    expect(options.allowCredentials ?? []).toEqual([])
    const user = await registerUser(t)
    const reg = await t.json('/api/auth/passkeys/register/options', { method: 'POST', headers: user.bearer })
    expect(reg.body.options.rp).toEqual({ id: 'localhost', name: 'Pixbin' })
    expect(reg.body.options.authenticatorSelection).toMatchObject({
      residentKey: 'required',
      userVerification: 'required',
    })
  })
})
