import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { NOSNIFF } from '../../http/errors'
import { OidcStartQuery } from './model'
import { OIDC_FLOW_TTL_MS, type OidcService, SignInRefused } from './oidc'
import type { AuthService } from './service'
import { originOf } from './session-origin'

const STATE_COOKIE = 'oidc_state'
const COOKIE_PATH = '/api/auth/oidc'

/** A redirect the browser must not keep (it may carry a token in its fragment, or set the state cookie). */
function seeOther(location: string, cookie?: string) {
  const headers: Record<string, string> = { ...NOSNIFF, location, 'cache-control': 'no-store' }
  if (cookie) headers['set-cookie'] = cookie
  return new Response(null, { status: 303, headers })
}

/** The state cookie: sent back only to the callback, on the provider's top-level redirect (Lax), never to scripts. */
function stateCookie(value: string, maxAgeSeconds: number, secure: boolean) {
  return `${STATE_COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
}

function cookieValue(header: string | null, name: string) {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) return value.join('=')
  }
  return undefined
}

/** The login page, with a message (a refused sign-in) or a session token for auth.js in the fragment. */
const loginPage = (next: string, fragment: Record<string, string>) =>
  `/login${next ? `?next=${encodeURIComponent(next)}` : ''}#${new URLSearchParams(fragment)}`

/**
 * OIDC single sign-on routes: a browser navigates to start, the provider sends it back to the callback, which hands
 * the session token to the login page (in the URL fragment, which no server sees) the way a password login's is kept.
 */
export function oidcRoutes(
  oidc: OidcService,
  auth: AuthService,
  guard: ReturnType<typeof authGuard>,
  opts: { secureCookie: boolean },
) {
  const docs = (summary: string, description: string) => ({
    summary,
    description,
    responses: { '303': { description } },
    // Public: the browser has no credential yet.
    security: [],
  })
  return new Elysia({ name: 'module-auth-oidc' })
    .use(guard)
    .group('/api/auth/oidc', { detail: { tags: ['Auth'] } }, (app) =>
      app
        .get(
          '/start',
          async ({ query }) => {
            try {
              const { url, state } = await oidc.start(query.next)
              return seeOther(url, stateCookie(state, OIDC_FLOW_TTL_MS / 1000, opts.secureCookie))
            } catch (error) {
              if (!(error instanceof SignInRefused)) throw error
              return seeOther(loginPage('', { error: error.message }))
            }
          },
          {
            query: OidcStartQuery,
            detail: docs(
              `Sign in with ${oidc.name} (a browser navigation)`,
              'Redirects to the OpenID provider (authorization code flow with PKCE, state and nonce), setting a short-lived state cookie; if the provider cannot be reached, back to /login with a message.',
            ),
          },
        )
        .get(
          '/callback',
          async ({ request, clientIp }) => {
            const clear = stateCookie('', 0, opts.secureCookie)
            try {
              const search = new URL(request.url).search
              const { user, next } = await oidc.callback(
                search,
                cookieValue(request.headers.get('cookie'), STATE_COOKIE),
              )
              const token = await auth.startSession(user, originOf(request, clientIp))
              return seeOther(loginPage(next, { token }), clear)
            } catch (error) {
              if (!(error instanceof SignInRefused)) throw error
              return seeOther(loginPage('', { error: error.message }), clear)
            }
          },
          {
            detail: docs(
              `Where ${oidc.name} sends the browser back`,
              'Checks state (against the cookie), PKCE and nonce, then signs in to the linked account; the first sign-in links an existing account by email (verified on both sides) or creates one. Redirects to /login with the session token (or a message) in the URL fragment.',
            ),
          },
        ),
    )
}
