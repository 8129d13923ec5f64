import { Elysia } from 'elysia'
import type { Server } from 'bun'

/**
 * The client IP is the socket peer. Behind a trusted reverse proxy (TRUST_PROXY) it is the last address of
 * X-Forwarded-For: the one the proxy appended, which a client cannot forge.
 */
export function resolveClientIp(request: Request, server: Server<unknown> | null, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim()
    if (forwarded) return forwarded
  }
  return server?.requestIP(request)?.address ?? 'unknown'
}

export function clientIp(trustProxy: boolean) {
  return new Elysia({ name: 'client-ip' }).derive({ as: 'global' }, ({ request, server }) => ({
    clientIp: resolveClientIp(request, server, trustProxy),
  }))
}
