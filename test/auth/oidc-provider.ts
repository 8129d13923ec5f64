import type { Server } from 'node:http'
import Provider from 'oidc-provider'
import type { ServerOverrides } from '../../src/server'
import { freePort, startTestServer } from '../helpers'

/** What the test provider says of an account (its login, as typed in its sign-in form, is the subject). */
export interface ProviderAccount {
  email?: string
  email_verified?: boolean
  preferred_username?: string
}

export interface TestProvider {
  issuer: string
  clientId: string
  clientSecret: string
  /** Accounts by subject; a login not listed signs in with only a subject. */
  accounts: Map<string, ProviderAccount>
  stop(): Promise<void>
}

/**
 * A real OpenID provider (oidc-provider, a certified implementation) on loopback, with one confidential client whose
 * redirect URI is `redirectUri`. Its development interactions sign in any login with any password, then ask consent.
 */
export async function startProvider(redirectUri: string, port = freePort()): Promise<TestProvider> {
  const issuer = `http://localhost:${port}`
  const accounts = new Map<string, ProviderAccount>()
  const clientId = 'imghost-test'
  const clientSecret = 'a-client-secret-for-the-tests-only'
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username'] },
    cookies: { keys: ['test-provider-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    async findAccount(_ctx, sub) {
      return { accountId: sub, claims: async () => ({ sub, ...accounts.get(sub) }) }
    },
  })
  const server: Server = provider.listen(port)
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** Cookies per origin, as a browser keeps them (paths and expiry ignored: each test flow is short and uses one jar). */
export class CookieJar {
  private readonly byOrigin = new Map<string, Map<string, string>>()

  store(url: URL, res: Response) {
    const cookies = this.byOrigin.get(url.origin) ?? new Map<string, string>()
    for (const header of res.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';')
      const [name, ...value] = pair.trim().split('=')
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value.join('=') === ''
      if (expired) cookies.delete(name)
      else cookies.set(name, value.join('='))
    }
    this.byOrigin.set(url.origin, cookies)
  }

  header(url: URL) {
    return [...(this.byOrigin.get(url.origin) ?? [])].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  get(url: URL, name: string) {
    return this.byOrigin.get(url.origin)?.get(name)
  }
}

/** One request as the browser makes it: its cookies sent and kept, redirects not followed. */
export async function browse(jar: CookieJar, url: URL, init: RequestInit = {}) {
  const res = await fetch(url, {
    ...init,
    redirect: 'manual',
    headers: { ...(init.headers as Record<string, string>), cookie: jar.header(url) },
  })
  jar.store(url, res)
  return res
}

/**
 * A test server signing in through a new test provider: the server's port, so its PUBLIC_URL and redirect URI, is
 * chosen first, for the provider to register.
 */
export async function serverWithProvider(overrides: ServerOverrides = {}) {
  const port = freePort()
  const publicUrl = `http://localhost:${port}`
  const provider = await startProvider(`${publicUrl}/api/auth/oidc/callback`)
  const server = await startTestServer(
    {
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      OIDC_ISSUER: provider.issuer,
      OIDC_CLIENT_ID: provider.clientId,
      OIDC_CLIENT_SECRET: provider.clientSecret,
      OIDC_NAME: 'Test ID',
    },
    overrides,
  )
  return { server, provider }
}
