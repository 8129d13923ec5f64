import { randomInt } from 'node:crypto'
import * as client from 'openid-client'
import { type Config, isLoopbackUrl } from '../../config'
import { type Db, run } from '../../db/client'
import type { User } from '../../db/schema'
import { DomainError } from '../../errors'
import { sameSitePath } from '../../http/next-path'
import { randomToken } from '../../lib/crypto'
import { log } from '../../log'
import { USERNAME_LENGTH } from './model'
import { findIdentityUser, findUserByLogin, findUserByName, insertIdentity, saveFlow, takeFlow } from './repository'
import type { AuthService } from './service'

/** A sign-in must come back from the provider within this time. */
export const OIDC_FLOW_TTL_MS = 10 * 60_000
/** Sign-ins started and not back yet; past it the oldest is forgotten (bounded under a flood of starts). */
const MAX_PENDING = 10_000
/** The provider's discovery, token and userinfo requests, each. */
const PROVIDER_TIMEOUT_SECONDS = 10

interface Pending {
  nonce: string
  verifier: string
  next: string
}

/** Thrown for every refused sign-in: the callback sends the browser back to the login page with its message. */
export class SignInRefused extends Error {}

/** A username from what the provider says, made valid: disallowed characters become `_`, then cut or padded. */
function usernameFrom(preferred: string) {
  const cleaned = preferred.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, USERNAME_LENGTH.max)
  return cleaned.length >= USERNAME_LENGTH.min ? cleaned : cleaned.padEnd(USERNAME_LENGTH.min, '_')
}

export type OidcService = ReturnType<typeof createOidcService>

/**
 * OpenID Connect single sign-on: the authorization code flow with PKCE, state and nonce. What a started sign-in must
 * find again (nonce, PKCE verifier, where to go after) is kept in the database under its state (the redirect may reach another instance); the browser holds the
 * state in a cookie too, so a callback from another browser (a login CSRF) is refused.
 */
export function createOidcService(opts: {
  db: Db
  oidc: NonNullable<Config['auth']['oidc']>
  auth: AuthService
  now: () => number
}) {
  const { db, oidc, auth, now } = opts
  let discovered: Promise<client.Configuration> | null = null

  /** The provider's configuration, fetched once (again after a failure). */
  function provider(): Promise<client.Configuration> {
    discovered ??= client
      .discovery(
        new URL(oidc.issuer),
        oidc.clientId,
        oidc.clientSecret || undefined,
        oidc.clientSecret ? undefined : client.None(),
        {
          timeout: PROVIDER_TIMEOUT_SECONDS,
          // openid-client refuses plain HTTP unless told; config.ts allows it only for an issuer on loopback.
          execute: oidc.issuer.startsWith('http:') && isLoopbackUrl(oidc.issuer) ? [client.allowInsecureRequests] : [],
        },
      )
      .catch((error) => {
        discovered = null
        log.warn('OIDC discovery failed', { issuer: oidc.issuer, error: String(error) })
        throw new SignInRefused(`${oidc.name} cannot be reached right now: try again later`)
      })
    return discovered
  }

  /** The account an identity signs in to: its linked one, else one linked or created by email. */
  async function accountOf(
    issuer: string,
    claims: { sub: string; email?: unknown; email_verified?: unknown; preferred_username?: unknown },
  ) {
    const linked = await findIdentityUser(db, issuer, claims.sub)
    if (linked) return linked
    const email = typeof claims.email === 'string' ? claims.email : ''
    if (!email) throw new SignInRefused(`${oidc.name} did not share an email address: no account can be made`)
    const emailVerified = claims.email_verified === true
    // Usernames cannot hold an `@`: only the account with this email answers.
    const existing = await run(findUserByLogin(db, email))
    let user: User
    if (existing) {
      // Linking hands the account to whoever controls that address at the provider: both sides must have proved it.
      if (!emailVerified || !existing.emailVerified)
        throw new SignInRefused(
          `An account with the email ${email} exists: both its address here and at ${oidc.name} must be verified to link them. Log in with your password instead.`,
        )
      user = existing
    } else {
      const preferred = typeof claims.preferred_username === 'string' ? claims.preferred_username : email.split('@')[0]
      const base = usernameFrom(preferred)
      let username = base
      for (let tries = 0; await run(findUserByName(db, username)); tries++) {
        if (tries === 5) throw new SignInRefused('No free username could be found: ask an administrator')
        username = `${base.slice(0, USERNAME_LENGTH.max - 5)}-${randomInt(10_000).toString().padStart(4, '0')}`
      }
      // A password nobody knows: the account signs in through the provider (or sets one with a password reset).
      user = await auth.createUser({ username, email, password: randomToken(), emailVerified })
    }
    try {
      await run(insertIdentity(db, { issuer, subject: claims.sub, userId: user.id }))
    } catch (error) {
      // The same identity's first sign-in twice at once: the other one linked it.
      if (!String(error).includes('UNIQUE')) throw error
    }
    return (await findIdentityUser(db, issuer, claims.sub))!
  }

  return {
    name: oidc.name,

    /** Starts a sign-in: the provider's authorization URL, and the state the browser must bring back. */
    async start(next: string | undefined) {
      const config = await provider()
      const at = now()
      const state = client.randomState()
      const nonce = client.randomNonce()
      const verifier = client.randomPKCECodeVerifier()
      // In the database: the provider's redirect may reach another instance.
      const data: Pending = { nonce, verifier, next: sameSitePath(next) ?? '' }
      await saveFlow(db, { key: state, kind: 'oidc', data, expiresAt: new Date(at + OIDC_FLOW_TTL_MS) }, MAX_PENDING)
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: oidc.redirectUri,
        scope: 'openid email profile',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      })
      return { url: url.href, state }
    },

    /**
     * Finishes a sign-in from the provider's redirect (`search`: its query string) in the browser holding
     * `cookieState`: the account it signs in to (created or linked on the first sign-in) and where to go next.
     */
    async callback(search: string, cookieState: string | undefined) {
      const params = new URLSearchParams(search)
      const state = params.get('state') ?? ''
      // Single use: whatever happens next, this state is done.
      const flow = state ? await takeFlow<Pending>(db, state, 'oidc', new Date(now())) : undefined
      if (!flow || !cookieState || cookieState !== state)
        throw new SignInRefused('This sign-in expired or was started in another browser: try again')
      if (params.has('error'))
        throw new SignInRefused(
          `${oidc.name} refused the sign-in: ${params.get('error_description') || params.get('error')}`,
        )
      const config = await provider()
      let claims: { sub: string; [claim: string]: unknown }
      try {
        const tokens = await client.authorizationCodeGrant(config, new URL(`${oidc.redirectUri}?${params}`), {
          pkceCodeVerifier: flow.verifier,
          expectedState: state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        })
        claims = tokens.claims()!
        // Providers put the email in the ID token or only behind the userinfo endpoint.
        if (claims.email === undefined)
          claims = { ...(await client.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims }
      } catch (error) {
        log.warn('OIDC sign-in failed', { issuer: oidc.issuer, error: String(error) })
        throw new SignInRefused(`Sign-in with ${oidc.name} failed: try again`)
      }
      let user: User
      try {
        user = await accountOf(config.serverMetadata().issuer, claims)
      } catch (error) {
        if (error instanceof SignInRefused) throw error
        // A domain refusal (an address the account rules refuse...) keeps its words.
        if (error instanceof DomainError) throw new SignInRefused(error.message)
        throw error
      }
      if (user.banned) throw new SignInRefused('This account is banned')
      return { user, next: flow.next }
    },
  }
}
