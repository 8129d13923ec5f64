import { Elysia } from 'elysia'

/**
 * The client IP is the socket peer. Behind a trusted reverse proxy (TRUST_PROXY) it is the last address of
 * X-Forwarded-For: the one the proxy appended, which a client cannot forge.
 */
export function clientIp(trustProxy: boolean) {
  return new Elysia({ name: 'client-ip' }).derive({ as: 'global' }, ({ request, server, headers }) => {
    if (trustProxy) {
      const forwarded = headers['x-forwarded-for']?.split(',').at(-1)?.trim()
      if (forwarded) return { clientIp: forwarded }
    }
    return { clientIp: server?.requestIP(request)?.address ?? 'unknown' }
  })
}
