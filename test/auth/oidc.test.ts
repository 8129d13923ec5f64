import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parse } from 'node-html-parser'
import { ConfigError, loadConfig } from '../../src/config'
import { freePort, jsonBody, registerUser, startTestServer, type TestServer } from '../helpers'
import { browse, CookieJar, serverWithProvider, startProvider, type TestProvider } from './oidc-provider'

/**
 * Single sign-on against a real OpenID provider on loopback: the browser's part (redirects, the provider's sign-in and
 * consent forms, cookies) is played here with plain HTTP requests.
 */

let provider: TestProvider
let t: TestServer

/** How far the server's clock runs ahead of the real one (the provider's and the ID tokens' stay real). */
let skew = 0

beforeAll(async () => {
  ;({ server: t, provider } = await serverWithProvider({ now: () => Date.now() + skew }))
})
afterAll(async () => {
  await t.stop()
  await provider.stop()
})

/**
 * Starts a sign-in and goes through the provider as `login` until the provider sends the browser back: the callback
 * URL, not yet visited, and the jar.
 */
async function toCallback(login: string, jar = new CookieJar(), next?: string) {
  let url = new URL(`${t.url}/api/auth/oidc/start${next ? `?next=${encodeURIComponent(next)}` : ''}`)
  let res = await browse(jar, url)
  for (let hops = 0; hops < 20; hops++) {
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url)
      if (url.pathname === '/api/auth/oidc/callback') return { callback: url, jar }
      res = await browse(jar, url)
      continue
    }
    expect(res.status).toBe(200)
    // The provider's sign-in or consent form: submitted as a person would.
    const form = parse(await res.text()).querySelector('form')!
    const prompt = form.querySelector('input[name="prompt"]')!.getAttribute('value')!
    const fields: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'anything' } : { prompt }
    url = new URL(form.getAttribute('action')!, url)
    res = await browse(jar, url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    })
  }
  throw new Error('the sign-in never came back')
}

/** Where the callback sends the browser: the login page, with the token or an error in the fragment. */
async function finish(callback: URL, jar: CookieJar) {
  const res = await browse(jar, callback)
  expect(res.status).toBe(303)
  expect(res.headers.get('cache-control')).toBe('no-store')
  const location = new URL(res.headers.get('location')!, callback)
  expect(location.pathname).toBe('/login')
  const fragment = new URLSearchParams(location.hash.slice(1))
  return { location, token: fragment.get('token'), error: fragment.get('error') }
}

async function signIn(login: string) {
  const { callback, jar } = await toCallback(login)
  return finish(callback, jar)
}

const me = (token: string) => t.json('/api/auth/me', { headers: { authorization: `Bearer ${token}` } })

describe('signing in with OIDC', () => {
  test('the first sign-in creates an account; the next ones sign in to the same one', async () => {
    provider.accounts.set('sub-alice', {
      email: 'alice@example.org',
      email_verified: true,
      preferred_username: 'alice',
    })
    const first = await signIn('sub-alice')
    expect(first.error).toBeNull()
    const created = await me(first.token!)
    expect(created.status).toBe(200)
    expect(created.body.user).toMatchObject({ username: 'alice', email: 'alice@example.org', emailVerified: true })

    const second = await signIn('sub-alice')
    expect((await me(second.token!)).body.user.id).toBe(created.body.user.id)
    // Her email changed at the provider: the identity still signs in to the same account.
    provider.accounts.set('sub-alice', { email: 'alice@elsewhere.example', email_verified: true })
    expect((await me((await signIn('sub-alice')).token!)).body.user.id).toBe(created.body.user.id)
  })

  test('a taken username gets a suffix; an unverified provider email makes an unverified account', async () => {
    await registerUser(t, 'carol')
    provider.accounts.set('sub-carol', {
      email: 'carol@idp.example',
      email_verified: false,
      preferred_username: 'carol',
    })
    const user = (await me((await signIn('sub-carol')).token!)).body.user
    expect(user.username).toMatch(/^carol-\d{4}$/)
    expect(user.emailVerified).toBe(false)
  })

  test('links to an existing account by email when both sides verified it', async () => {
    const local = await registerUser(t, 'dave')
    await t.server.services.admin.updateUser(local.user.id, { emailVerified: true })
    provider.accounts.set('sub-dave', { email: 'DAVE@example.com', email_verified: true })
    const { token } = await signIn('sub-dave')
    expect((await me(token!)).body.user.id).toBe(local.user.id)
    // The password still works as well.
    const login = await t.json('/api/auth/login', {
      method: 'POST',
      ...jsonBody({ username: 'dave', password: local.password }),
    })
    expect(login.status).toBe(200)
  })

  test('refuses to link when either side has not verified the email, and creates nothing', async () => {
    const local = await registerUser(t, 'erin')
    provider.accounts.set('sub-erin', { email: 'erin@example.com', email_verified: true })
    const unverifiedHere = await signIn('sub-erin')
    expect(unverifiedHere.token).toBeNull()
    expect(unverifiedHere.error).toContain('must be verified to link them')

    await t.server.services.admin.updateUser(local.user.id, { emailVerified: true })
    provider.accounts.set('sub-erin-2', { email: 'erin@example.com', email_verified: false })
    expect((await signIn('sub-erin-2')).token).toBeNull()
    // Once the provider has verified it, the identity links.
    provider.accounts.set('sub-erin-2', { email: 'erin@example.com', email_verified: true })
    expect((await me((await signIn('sub-erin-2')).token!)).body.user.id).toBe(local.user.id)
  })

  test('no email from the provider: refused', async () => {
    const { token, error } = await signIn('sub-nobody')
    expect(token).toBeNull()
    expect(error).toContain('did not share an email address')
  })

  test('a banned account is refused', async () => {
    provider.accounts.set('sub-frank', { email: 'frank@example.org', email_verified: true })
    const { token } = await signIn('sub-frank')
    const id = (await me(token!)).body.user.id
    await t.server.services.admin.updateUser(id, { banned: true })
    const again = await signIn('sub-frank')
    expect(again.token).toBeNull()
    expect(again.error).toBe('This account is banned')
  })

  test('the page asked for comes back as ?next= with the token', async () => {
    provider.accounts.set('sub-gina', { email: 'gina@example.org', email_verified: true })
    const { callback, jar } = await toCallback('sub-gina', new CookieJar(), '/dashboard#keys')
    const { location, token } = await finish(callback, jar)
    expect(location.searchParams.get('next')).toBe('/dashboard#keys')
    expect(token).toBeTruthy()
  })

  test('a next that resolves to another host does not come back (the one check, src/http/next-path.ts)', async () => {
    for (const [i, next] of ['/.//evil.example/x', '/..//x', '//evil.example', '/\\evil.example'].entries()) {
      provider.accounts.set(`sub-next-${i}`, { email: `next${i}@example.org`, email_verified: true })
      const { callback, jar } = await toCallback(`sub-next-${i}`, new CookieJar(), next)
      const { location, token } = await finish(callback, jar)
      expect(location.searchParams.has('next')).toBe(false)
      expect(token).toBeTruthy()
    }
  })
})

describe('the checks of the flow', () => {
  test('a state that is not the one started is refused, and so is one replayed', async () => {
    provider.accounts.set('sub-hank', { email: 'hank@example.org', email_verified: true })
    const { callback, jar } = await toCallback('sub-hank')
    const tampered = new URL(callback)
    tampered.searchParams.set('state', 'not-the-state')
    const refused = await finish(tampered, jar)
    expect(refused.token).toBeNull()
    expect(refused.error).toContain('expired or was started in another browser')

    // Callbacks are single-use: the real one after a refused try still works once, then never again.
    const { callback: second, jar: secondJar } = await toCallback('sub-hank')
    expect((await finish(second, secondJar)).token).toBeTruthy()
    expect((await finish(second, secondJar)).token).toBeNull()
  })

  test('a sign-in that comes back after 10 minutes is refused', async () => {
    provider.accounts.set('sub-jack', { email: 'jack@example.org', email_verified: true })
    const { callback, jar } = await toCallback('sub-jack')
    skew = 10 * 60_000
    try {
      const late = await finish(callback, jar)
      expect(late.token).toBeNull()
      expect(late.error).toContain('expired')
    } finally {
      skew = 0
    }
  })

  test("the callback in another browser (without the start's cookie) is refused: no login CSRF", async () => {
    provider.accounts.set('sub-ivy', { email: 'ivy@example.org', email_verified: true })
    const { callback } = await toCallback('sub-ivy')
    const elsewhere = await finish(callback, new CookieJar())
    expect(elsewhere.token).toBeNull()
    expect(elsewhere.error).toContain('another browser')
  })

  test('start sets an HttpOnly, SameSite=Lax state cookie scoped to the OIDC routes and sends PKCE and a nonce', async () => {
    const res = await t.fetch('/api/auth/oidc/start', { redirect: 'manual' })
    expect(res.status).toBe(303)
    const cookie = res.headers.get('set-cookie')!
    expect(cookie).toMatch(/^oidc_state=[\w-]+; Path=\/api\/auth\/oidc; Max-Age=600; HttpOnly; SameSite=Lax$/)
    const authorize = new URL(res.headers.get('location')!)
    expect(authorize.origin).toBe(provider.issuer)
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256')
    expect(authorize.searchParams.get('nonce')).toBeTruthy()
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${t.url}/api/auth/oidc/callback`)
    expect(cookie).toContain(`oidc_state=${authorize.searchParams.get('state')};`)
  })

  test("the login page's next path is checked by the server: kept in data-next and the button's link, or dropped", async () => {
    const page = async (next: string) => parse(await (await t.fetch(`/login?next=${encodeURIComponent(next)}`)).text())
    const kept = await page('/gallery?page=2#top')
    expect(kept.querySelector('#login-form')!.getAttribute('data-next')).toBe('/gallery?page=2#top')
    expect(kept.querySelector('#sso-start')!.getAttribute('href')).toBe(
      `/api/auth/oidc/start?next=${encodeURIComponent('/gallery?page=2#top')}`,
    )
    for (const next of [
      '/.//evil.example/x',
      '/..//x',
      '/\\evil.example',
      '/\t/evil.example',
      'https://evil.example',
    ]) {
      const dropped = await page(next)
      expect(dropped.querySelector('#login-form')!.getAttribute('data-next')).toBe('')
      expect(dropped.querySelector('#sso-start')!.getAttribute('href')).toBe('/api/auth/oidc/start')
    }
  })

  test('the login page offers the button with OIDC_NAME, and keeps the password form', async () => {
    const page = parse(await (await t.fetch('/login')).text())
    const button = page.querySelector('a[href="/api/auth/oidc/start"]')!
    expect(button.textContent).toBe('Sign in with Test ID')
    expect(page.querySelector('[data-auth-form="login"]')).not.toBeNull()
  })

  test('the routes are in the OpenAPI document', async () => {
    const doc = (await t.json('/swagger/json')).body
    expect(doc.paths['/api/auth/oidc/start'].get.responses['303']).toBeDefined()
    expect(doc.paths['/api/auth/oidc/callback'].get).toBeDefined()
  })
})

describe('OIDC_ONLY and configuration', () => {
  test('OIDC_ONLY=true refuses password login and registration (403) and hides the password form; https cookies are Secure', async () => {
    const only = await startTestServer({
      PUBLIC_URL: 'https://img.example',
      OIDC_ISSUER: provider.issuer,
      OIDC_CLIENT_ID: provider.clientId,
      OIDC_ONLY: 'true',
    })
    try {
      const login = await only.json('/api/auth/login', {
        method: 'POST',
        ...jsonBody({ username: 'someone', password: 'whatever123' }),
      })
      expect(login.status).toBe(403)
      expect(login.body.error).toContain('Password login is off')
      const register = await only.json('/api/auth/register', {
        method: 'POST',
        ...jsonBody({ username: 'someone', email: 'someone@example.com', password: 'whatever123' }),
      })
      expect(register.status).toBe(403)
      const page = parse(await (await only.fetch('/login')).text())
      expect(page.querySelector('[data-auth-form="login"]')).toBeNull()
      expect(page.querySelector('a[href="/api/auth/oidc/start"]')).not.toBeNull()
      // The register page has no form either: it sends to the provider, whose first sign-in makes the account.
      const registerPage = parse(await (await only.fetch('/register')).text())
      expect(registerPage.querySelector('[data-auth-form="register"]')).toBeNull()
      expect(registerPage.querySelector('#registration-sso a[href="/api/auth/oidc/start"]')).not.toBeNull()
      // Behind https, the state cookie is Secure and the redirect URI comes from PUBLIC_URL.
      const start = await only.fetch('/api/auth/oidc/start', { redirect: 'manual' })
      expect(start.headers.get('set-cookie')).toEndWith('; HttpOnly; SameSite=Lax; Secure')
      const authorize = new URL(start.headers.get('location')!)
      expect(authorize.searchParams.get('redirect_uri')).toBe('https://img.example/api/auth/oidc/callback')
    } finally {
      await only.stop()
    }
  })

  test('a provider that cannot be reached sends the browser back to the login page with a message', async () => {
    const dead = await startTestServer({ OIDC_ISSUER: `http://127.0.0.1:${freePort()}`, OIDC_CLIENT_ID: 'x' })
    try {
      const res = await dead.fetch('/api/auth/oidc/start', { redirect: 'manual' })
      expect(res.status).toBe(303)
      const location = new URL(res.headers.get('location')!, dead.url)
      expect(location.pathname).toBe('/login')
      expect(new URLSearchParams(location.hash.slice(1)).get('error')).toContain('cannot be reached')
    } finally {
      await dead.stop()
    }
  })

  test('discovery is tried again after a failure: the provider started later works', async () => {
    const providerPort = freePort()
    const port = freePort()
    const late = await startTestServer({
      PORT: String(port),
      OIDC_ISSUER: `http://localhost:${providerPort}`,
      OIDC_CLIENT_ID: 'imghost-test',
    })
    let started: TestProvider | null = null
    try {
      const down = await late.fetch('/api/auth/oidc/start', { redirect: 'manual' })
      expect(down.headers.get('location')).toStartWith('/login#error=')
      started = await startProvider(`http://localhost:${port}/api/auth/oidc/callback`, providerPort)
      const up = await late.fetch('/api/auth/oidc/start', { redirect: 'manual' })
      expect(up.headers.get('location')).toStartWith(`${started.issuer}/`)
    } finally {
      await late.stop()
      await started?.stop()
    }
  })

  test('without OIDC_ISSUER there are no OIDC routes and no button', async () => {
    const plain = await startTestServer()
    try {
      expect((await plain.fetch('/api/auth/oidc/start', { redirect: 'manual' })).status).toBe(404)
      expect(await (await plain.fetch('/login')).text()).not.toContain('/api/auth/oidc/start')
    } finally {
      await plain.stop()
    }
  })

  test('the variables are checked at start', () => {
    const base = { DATA_DIR: '/tmp/x' }
    expect(() => loadConfig({ ...base, OIDC_ISSUER: 'http://idp.example.com', OIDC_CLIENT_ID: 'x' })).toThrow(
      ConfigError,
    )
    expect(() => loadConfig({ ...base, OIDC_ISSUER: 'https://idp.example.com' })).toThrow('OIDC_CLIENT_ID')
    expect(() => loadConfig({ ...base, OIDC_ONLY: 'true' })).toThrow('OIDC_ONLY')
    const config = loadConfig({
      ...base,
      PUBLIC_URL: 'https://img.example',
      OIDC_ISSUER: 'https://idp.example.com',
      OIDC_CLIENT_ID: 'x',
    })
    expect(config.auth.oidc?.redirectUri).toBe('https://img.example/api/auth/oidc/callback')
    expect(loadConfig({ ...base, OIDC_ISSUER: 'http://127.0.0.1:9', OIDC_CLIENT_ID: 'x' }).auth.oidc?.issuer).toBe(
      'http://127.0.0.1:9',
    )
  })
})
