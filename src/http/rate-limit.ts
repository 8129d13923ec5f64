import type { Server } from 'bun'
import { Elysia } from 'elysia'
import { resolveClientIp } from './client-ip'
import { HttpError } from './errors'

const pathOf = (url: string) => url.slice(url.indexOf('/', url.indexOf('//') + 2))

const MINUTE_MS = 60_000

export type GlobalRateLimit = ReturnType<typeof globalRateLimit>

/**
 * Global limiter: fixed one-minute windows per client IP over /api/*, each starting at the IP's first request
 * after its previous window ended. Kept in memory: it guards against floods, not against restarts.
 * `admit` is the check itself, for the app's plugin and for the routes Bun answers ahead of the app.
 */
export function globalRateLimit(opts: { limit: number; trustProxy: boolean }) {
  const { limit } = opts
  const windows = new Map<string, { start: number; used: number }>()

  function prune(now: number) {
    for (const [ip, w] of windows) if (w.start + MINUTE_MS <= now) windows.delete(ip)
  }

  /** Counts an /api request against its client's window; throws 429 once the window is used up. */
  function admit(request: Request, server: Server<unknown> | null) {
    if (!pathOf(request.url).startsWith('/api/')) return
    const clientIp = resolveClientIp(request, server, opts.trustProxy)
    const now = Date.now()
    if (windows.size > 50_000) prune(now)
    let w = windows.get(clientIp)
    if (!w || w.start + MINUTE_MS <= now) {
      w = { start: now, used: 0 }
      windows.set(clientIp, w)
    }
    w.used++
    if (w.used > limit) {
      const reset = Math.max(1, Math.ceil((w.start + MINUTE_MS - now) / 1000))
      throw new HttpError(429, 'Too many requests', { retryAfter: reset }, {
        'Retry-After': String(reset),
        'RateLimit-Limit': String(limit),
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': String(reset),
      })
    }
  }

  return {
    admit,
    // onRequest runs before anything is parsed or looked up, so a flood costs as little as possible.
    plugin: new Elysia({ name: 'global-rate-limit' }).onRequest(({ request, server }) => admit(request, server)),
  }
}
