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
 * Where instances sharing a database add up their counts (PostgreSQL): adds each key's new requests to its window and
 * answers every instance's total in it, and the window's start (a window ended restarts at `now`).
 */
export type SharedCounts = (
  batch: { key: string; count: number }[],
  now: number,
  windowMs: number,
) => Promise<{ key: string; start: number; used: number }[]>

/** How often an instance adds its counts to the shared ones (and learns the others'). */
export const SHARED_SYNC_MS = 250

/**
 * Global limiter: fixed one-minute windows per client IP (IPv6 by /64) over /api/*, each starting at the IP's first
 * request after its previous window ended. Kept in memory: it guards against floods, not against restarts.
 * `admit` is the check itself, for the app's plugin and for the routes Bun answers ahead of the app.
 * `now` is the windows' clock (tests step it). `windowMs` and `prefix` make other such limits (the signed variants
 * made per second: src/modules/cdn).
 *
 * With `shared` (instances on one PostgreSQL database), each instance still decides in memory, on its own count plus
 * the others' as last learnt: every SHARED_SYNC_MS (`sync`) it adds its new requests to the key's row and reads back
 * the total. So a client is held to the limit across instances, give or take what the others admitted since their
 * last sync (at most a sync interval's worth per instance).
 */
export function globalRateLimit(opts: {
  limit: number
  trustProxy: boolean
  now?: () => number
  windowMs?: number
  prefix?: string
  shared?: SharedCounts
}) {
  const { limit, shared } = opts
  const clock = opts.now ?? Date.now
  const windowMs = opts.windowMs ?? WINDOW_MS
  const prefix = opts.prefix ?? API_PREFIX
  /**
   * A client's window: `used` its requests here, `others` those of the other instances as last learnt, `pending`
   * requests here not yet added to the shared count, `sent` those added.
   */
  type Window = { start: number; used: number; others: number; pending: number; sent: number }
  // A Map iterates in insertion order and every window is (re)inserted when it starts, so the oldest come first.
  const windows = new Map<string, Window>()

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
      w = { start: now, used: 0, others: 0, pending: 0, sent: 0 }
      windows.set(key, w)
    }
    w.used++
    w.pending++
    if (w.used + w.others > limit) {
      const reset = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000))
      throw new RateLimited('Too many requests', { limit, remaining: 0, resetSeconds: reset })
    }
  }

  /** Adds this instance's new requests to the shared counts and learns the others' (one statement for every key). */
  async function sync(now = clock()) {
    if (!shared) return
    // Windows with new requests, and those past half the limit, whose clients the others may be refusing already.
    const batch: { key: string; count: number; window: Window }[] = []
    for (const [key, w] of windows)
      if (w.pending > 0 || 2 * (w.used + w.others) >= limit) batch.push({ key, count: w.pending, window: w })
    if (batch.length === 0) return
    for (const entry of batch) entry.window.pending = 0
    const totals = new Map((await shared(batch, now, windowMs)).map((t) => [t.key, t]))
    for (const { key, count, window } of batch) {
      window.sent += count
      const total = totals.get(key)
      // A window that ended here meanwhile starts afresh; its count went to the ended shared one.
      if (!total || windows.get(key) !== window) continue
      window.start = Math.min(window.start, total.start)
      window.others = Math.max(0, total.used - window.sent)
    }
  }

  return {
    admit,
    sweep,
    sync,
    /** Windows held right now. */
    size: () => windows.size,
    // onRequest runs before anything is parsed or looked up, so a flood costs as little as possible.
    plugin: new Elysia({ name: 'global-rate-limit' }).onRequest(({ request, server }) => admit(request, server)),
  }
}
