import { jwt } from '@elysiajs/jwt'
import { Elysia } from 'elysia'
import type { User } from '../db/schema'
import { forbidden, unauthorized } from '../errors'
import { clientIp } from './client-ip'

/** How long a JWT (and so its session) lasts: 7 days, as the contract says. */
const JWT_TTL_SECONDS = 7 * 24 * 3600
/** A session id as startSession makes them; anything else in `sid` is refused before a lookup. */
const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/

/**
 * Signs session JWTs (HS256, `sub` the user id, `sid` the session id, expiring after 7 days); the guard verifies them
 * with the same plugin. Made once in src/app.ts: the auth service signs, the guard checks.
 */
export function sessionTokens(secret: string) {
  const plugin = jwt({ name: 'jwt', secret, alg: 'HS256', exp: `${JWT_TTL_SECONDS}s` })
  return {
    plugin,
    ttlMs: JWT_TTL_SECONDS * 1000,
    sign: (claims: { sub: string; sid: string }) => plugin.decorator.jwt.sign(claims),
  }
}
export type SessionTokens = ReturnType<typeof sessionTokens>

/** OpenAPI security requirements, named as in the document's securitySchemes. */
export const security = {
  apiKey: [{ apiKey: [] }],
  bearer: [{ bearer: [] }],
  optionalBearer: [{}, { bearer: [] }],
  apiKeyOrDeleteToken: [{ apiKey: [] }, { deleteToken: [] }],
} as const

/**
 * What the guard asks of the accounts (the auth service answers it, wired in src/app.ts): the active user behind a
 * live session (user id and session id) or an API key; each throws Unauthorized (or Forbidden for a banned account)
 * otherwise.
 */
export interface Callers {
  sessionUser(userId: number, sessionId: string): Promise<User>
  keyUser(secret: string): Promise<User>
}

/** A signed-in caller: the account and the session its JWT belongs to. */
export type Session = { user: User; sessionId: string }

function bearerToken(header: string | undefined): string | null {
  if (!header) return null
  const match = /^Bearer\s+(\S+)$/i.exec(header)
  if (!match) throw unauthorized('Malformed Authorization header')
  return match[1]
}

/**
 * The one auth guard: it knows the client IP, and routes opt in with `apiKey`, `session`, `optionalSession` or `admin`, and receive `user`.
 * A credential that is present but wrong is always 401, never treated as anonymous.
 */
export function authGuard(auth: Callers, tokens: SessionTokens, opts: { trustProxy: boolean }) {
  return new Elysia({ name: 'auth-guard' })
    .use(tokens.plugin)
    .use(clientIp(opts.trustProxy))
    .derive({ as: 'global' }, ({ jwt }) => ({
      /** Resolves the bearer token of a request, or null when none was sent. */
      async sessionFrom(header: string | undefined): Promise<Session | null> {
        const token = bearerToken(header)
        if (token === null) return null
        // Pinning the algorithm refuses `alg: none` and any algorithm switch.
        const payload = await jwt.verify(token, { algorithms: ['HS256'] })
        const userId = payload && typeof payload.sub === 'string' ? Number(payload.sub) : NaN
        const sessionId = payload && typeof payload.sid === 'string' ? payload.sid : ''
        // Every token we issue expires: one without `exp` (verify accepts it) would be valid forever. One without a
        // session (issued before sessions existed) could not be ended: refused too.
        if (!payload || !Number.isSafeInteger(userId) || typeof payload.exp !== 'number' || !SESSION_ID.test(sessionId))
          throw unauthorized('Invalid or expired token')
        return { user: await auth.sessionUser(userId, sessionId), sessionId }
      },
    }))
    .macro({
      apiKey: {
        detail: { security: security.apiKey as unknown as Record<string, string[]>[] },
        async resolve({ headers }) {
          const secret = headers['x-api-key']
          if (!secret) throw unauthorized('Missing API key (X-API-Key header)')
          return { user: await auth.keyUser(secret) }
        },
      },
      /** The owner's key, or (for anonymous uploads) a delete token that the route checks itself. */
      apiKeyOrDeleteToken: {
        detail: { security: security.apiKeyOrDeleteToken as unknown as Record<string, string[]>[] },
        async resolve({ headers }) {
          const secret = headers['x-api-key']
          if (secret) return { user: (await auth.keyUser(secret)) as User | null }
          if (!headers['x-delete-token']) throw unauthorized('Missing API key (X-API-Key header)')
          return { user: null as User | null }
        },
      },
      session: {
        detail: { security: security.bearer as unknown as Record<string, string[]>[] },
        async resolve({ headers, sessionFrom }) {
          const session = await sessionFrom(headers.authorization)
          if (!session) throw unauthorized('Missing bearer token')
          return session
        },
      },
      optionalSession: {
        detail: { security: security.optionalBearer as unknown as Record<string, string[]>[] },
        async resolve({ headers, sessionFrom }) {
          return { user: (await sessionFrom(headers.authorization))?.user ?? null }
        },
      },
      admin: {
        detail: { security: security.bearer as unknown as Record<string, string[]>[] },
        async resolve({ headers, sessionFrom }) {
          const session = await sessionFrom(headers.authorization)
          if (!session) throw unauthorized('Missing bearer token')
          if (session.user.role !== 'admin') throw forbidden('Admin only')
          return { user: session.user }
        },
      },
    })
}
