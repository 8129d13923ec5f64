import type { Server } from 'bun'
import { Elysia } from 'elysia'
import { RateLimited, type RateLimitFacts } from '../errors'
import { ipKey, resolveClientIp } from './client-ip'

const pathOf = (url: string) => url.slice(url.indexOf('/', url.indexOf('//') + 2))

const WINDOW_MS = 60_000
/** What the global per-IP limiter covers: the whole API (the OpenAPI document gives each of its operations a 429). */
export const API_PREFIX = '/api/'

/** A rate window's state as the RateLimit-* headers of an answer (a success, or the 429 with its Retry-After). */
export function rateLimitHeaders(state: RateLimitFacts): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  }
}

export type GlobalRateLimit = ReturnType<typeof globalRateLimit>

/**
 * Global limiter: fixed one-minute windows per client IP (IPv6 by /64) over /api/*, each starting at the IP's first
 * request after its previous window ended. Kept in memory: it guards against floods, not against restarts.
 * `admit` is the check itself, for the app's plugin and for the routes Bun answers ahead of the app.
 * `now` is the windows' clock (tests step it). `windowMs` and `prefix` make other such limits (the signed variants
 * made per second: src/modules/cdn).
 */
export function globalRateLimit(opts: {
  limit: number
  trustProxy: boolean
  now?: () => number
  windowMs?: number
  prefix?: string
}) {
  const { limit } = opts
  const clock = opts.now ?? Date.now
  const windowMs = opts.windowMs ?? WINDOW_MS
  const prefix = opts.prefix ?? API_PREFIX
  // A Map iterates in insertion order and every window is (re)inserted when it starts, so the oldest come first.
  const windows = new Map<string, { start: number; used: number }>()

  /** Drops the windows that have ended, from the front; returns how many entries it looked at. */
  function sweep(now: number): number {
    let visited = 0
    for (const [key, w] of windows) {
      visited++
      if (w.start + windowMs > now) break
      windows.delete(key)
    }
    return visited
  }

  /** Counts an /api request against its client's window; throws 429 once the window is used up. */
  function admit(request: Request, server: Server<unknown> | null, now = clock()) {
    if (!pathOf(request.url).startsWith(prefix)) return
    const key = ipKey(resolveClientIp(request, server, opts.trustProxy))
    sweep(now)
    let w = windows.get(key)
    // Only a clock stepped back can leave an ended window behind a live one: it starts again at the back.
    if (!w || w.start + windowMs <= now) {
      windows.delete(key)
      w = { start: now, used: 0 }
      windows.set(key, w)
    }
    w.used++
    if (w.used > limit) {
      const reset = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000))
      throw new RateLimited('Too many requests', { limit, remaining: 0, resetSeconds: reset })
    }
  }

  return {
    admit,
    sweep,
    /** Windows held right now. */
    size: () => windows.size,
    // onRequest runs before anything is parsed or looked up, so a flood costs as little as possible.
    plugin: new Elysia({ name: 'global-rate-limit' }).onRequest(({ request, server }) => admit(request, server)),
  }
}
