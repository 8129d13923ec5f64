import { expect } from 'bun:test'
import type { TestClock } from './helpers'

export interface WindowAnswer {
  status: number
  headers: Headers
}

function expectRefused(res: WindowAnswer | undefined, seconds: number) {
  expect(res?.status).toBe(429)
  expect(res!.headers.get('retry-after')).toBe(String(seconds))
  expect(res!.headers.get('ratelimit-reset')).toBe(String(seconds))
  expect(res!.headers.get('ratelimit-remaining')).toBe('0')
}

/**
 * Walks a fixed window of `limit` per `windowMs` past its end twice. `use(n)` spends n of it from one client (in one
 * or more requests, answers in order); the window must be unused when this starts, at the clock's current time.
 * - used up: 429 with Retry-After (and RateLimit-Reset) for the whole window, RateLimit-Remaining 0;
 * - its last millisecond: still 429, Retry-After 1 (it did not reset early);
 * - a while after its end: accepted, with a full window that starts at that request, not at the old end
 *   (RateLimit-Remaining limit - 1, RateLimit-Reset the whole window), and exactly `limit` fit in it;
 * - that window in turn: 429 on its last millisecond, accepted on the first one after it.
 * `headers`: whether accepted answers carry RateLimit-* (the upload and report windows do, the global limiter does not).
 */
export async function expectWindowResets(
  clock: TestClock,
  opts: { limit: number; windowMs: number; use: (n: number) => Promise<WindowAnswer[]>; headers: boolean },
) {
  const { limit, windowMs, use } = opts
  const seconds = windowMs / 1000
  const spend = async (n: number) => {
    const answers = await use(n)
    expect(answers.length).toBeGreaterThan(0)
    for (const res of answers) expect(res.status, 'an answer within the window').toBeLessThan(300)
    return answers.at(-1)!
  }
  const expectFresh = (res: WindowAnswer) => {
    if (!opts.headers) return
    expect(res.headers.get('ratelimit-remaining')).toBe(String(limit - 1))
    expect(res.headers.get('ratelimit-reset')).toBe(String(seconds))
  }

  const start = clock.now()
  const first = await spend(limit)
  if (opts.headers) expect(first.headers.get('ratelimit-remaining')).toBe('0')
  expectRefused((await use(1))[0], seconds)
  clock.set(start + windowMs - 1)
  expectRefused((await use(1))[0], 1)

  // A quarter of a window after the end: the next window starts here, so it has its whole length again.
  const restart = start + windowMs + windowMs / 4
  clock.set(restart)
  expectFresh(await spend(1))
  if (limit > 1) await spend(limit - 1)
  expectRefused((await use(1))[0], seconds)
  clock.set(restart + windowMs - 1)
  expectRefused((await use(1))[0], 1)
  clock.set(restart + windowMs)
  expectFresh(await spend(1))
}
