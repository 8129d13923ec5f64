import { Elysia } from 'elysia'
import type { Server } from 'bun'

/** Resolved once per request: the global limiter and the auth guard both ask (a socket lookup each, on every /api request). */
const resolved = new WeakMap<Request, string>()

/**
 * The client IP is the socket peer. Behind a trusted reverse proxy (TRUST_PROXY) it is the last address of
 * X-Forwarded-For: the one the proxy appended, which a client cannot forge.
 */
export function resolveClientIp(request: Request, server: Server<unknown> | null, trustProxy: boolean): string {
  let ip = resolved.get(request)
  if (ip === undefined) {
    const forwarded = trustProxy ? request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim() : undefined
    ip = forwarded || (server?.requestIP(request)?.address ?? 'unknown')
    resolved.set(request, ip)
  }
  return ip
}


export function clientIp(trustProxy: boolean) {
  return new Elysia({ name: 'client-ip' }).derive({ as: 'global' }, ({ request, server }) => ({
    clientIp: resolveClientIp(request, server, trustProxy),
  }))
}
