import type { SessionOrigin } from './sessions'

/**
 * Where a sign-in came from, for the session list: every way in (password, two-factor, passkey, single sign-on) starts
 * its session with `auth.startSession(user, originOf(request, clientIp))`.
 */
export const originOf = (request: Request, clientIp: string): SessionOrigin => ({
  userAgent: request.headers.get('user-agent'),
  ip: clientIp,
})
