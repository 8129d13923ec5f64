import { jwt } from '@elysiajs/jwt'
import { Elysia } from 'elysia'
import type { User } from '../db/schema'
import { forbidden, unauthorized } from '../errors'
import { clientIp } from './client-ip'

const JWT_TTL = '7d'

/** OpenAPI security requirements, named as in the document's securitySchemes. */
export const security = {
  apiKey: [{ apiKey: [] }],
  bearer: [{ bearer: [] }],
  optionalBearer: [{}, { bearer: [] }],
  apiKeyOrDeleteToken: [{ apiKey: [] }, { deleteToken: [] }],
} as const

/**
 * What the guard asks of the accounts (the auth service answers it, wired in src/app.ts): the active user behind a
 * session's user id or an API key; each throws Unauthorized (or Forbidden for a banned account) otherwise.
 */
export interface Callers {
  sessionUser(userId: number): User
  keyUser(secret: string): User
}

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
export function authGuard(auth: Callers, opts: { secret: string; trustProxy: boolean }) {
  return new Elysia({ name: 'auth-guard' })
    .use(jwt({ name: 'jwt', secret: opts.secret, alg: 'HS256', exp: JWT_TTL }))
    .use(clientIp(opts.trustProxy))
    .derive({ as: 'global' }, ({ jwt }) => ({
      /** Resolves the bearer token of a request, or null when none was sent. */
      async sessionFrom(header: string | undefined): Promise<User | null> {
        const token = bearerToken(header)
        if (token === null) return null
        // Pinning the algorithm refuses `alg: none` and any algorithm switch.
        const payload = await jwt.verify(token, { algorithms: ['HS256'] })
        const userId = payload && typeof payload.sub === 'string' ? Number(payload.sub) : NaN
        // Every token we issue expires: one without `exp` (verify accepts it) would be valid forever.
        if (!payload || !Number.isSafeInteger(userId) || typeof payload.exp !== 'number')
          throw unauthorized('Invalid or expired token')
        return auth.sessionUser(userId)
      },
    }))
    .macro({
      apiKey: {
        detail: { security: security.apiKey as unknown as Record<string, string[]>[] },
        resolve({ headers }) {
          const secret = headers['x-api-key']
          if (!secret) throw unauthorized('Missing API key (X-API-Key header)')
          return { user: auth.keyUser(secret) }
        },
      },
      /** The owner's key, or (for anonymous uploads) a delete token that the route checks itself. */
      apiKeyOrDeleteToken: {
        detail: { security: security.apiKeyOrDeleteToken as unknown as Record<string, string[]>[] },
        resolve({ headers }) {
          const secret = headers['x-api-key']
          if (secret) return { user: auth.keyUser(secret) as User | null }
          if (!headers['x-delete-token']) throw unauthorized('Missing API key (X-API-Key header)')
          return { user: null as User | null }
        },
      },
      session: {
        detail: { security: security.bearer as unknown as Record<string, string[]>[] },
        async resolve({ headers, sessionFrom }) {
          const user = await sessionFrom(headers.authorization)
          if (!user) throw unauthorized('Missing bearer token')
          return { user }
        },
      },
      optionalSession: {
        detail: { security: security.optionalBearer as unknown as Record<string, string[]>[] },
        async resolve({ headers, sessionFrom }) {
          return { user: await sessionFrom(headers.authorization) }
        },
      },
      admin: {
        detail: { security: security.bearer as unknown as Record<string, string[]>[] },
        async resolve({ headers, sessionFrom }) {
          const user = await sessionFrom(headers.authorization)
          if (!user) throw unauthorized('Missing bearer token')
          if (user.role !== 'admin') throw forbidden('Admin only')
          return { user }
        },
      },
    })
}
