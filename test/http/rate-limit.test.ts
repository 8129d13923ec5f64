import { describe, expect, test } from 'bun:test'
import { RateLimited } from '../../src/errors'
import { globalRateLimit } from '../../src/http/rate-limit'

/** A request from `ip`, as a trusted proxy would name it. */
const from = (ip: string) => new Request('http://localhost/api/gallery', { headers: { 'x-forwarded-for': ip } })

describe('the global limiter', () => {
  test('IPv6 clients of one /64 share one window; an IPv4-mapped address shares the IPv4 one', () => {
    const limiter = globalRateLimit({ limit: 3, trustProxy: true })
    for (const ip of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3']) limiter.admit(from(ip), null, 0)
    expect(() => limiter.admit(from('2001:db8:1:2::4'), null, 0)).toThrow(RateLimited)
    limiter.admit(from('2001:db8:1:3::1'), null, 0)
    for (const ip of ['198.51.100.1', '::ffff:198.51.100.1', '198.51.100.1']) limiter.admit(from(ip), null, 0)
    expect(() => limiter.admit(from('::ffff:c633:6401'), null, 0)).toThrow(RateLimited)
  })

  test('cleanup looks only at the windows that ended (plus one), never at every window', () => {
    const limiter = globalRateLimit({ limit: 10, trustProxy: true })
    for (let i = 0; i < 5; i++) limiter.admit(from(`192.0.2.${i}`), null, 0)
    for (let i = 0; i < 20_000; i++) limiter.admit(from(`10.${i >> 8}.${i & 255}.1`), null, 30_000)
    expect(limiter.size()).toBe(20_005)
    // A minute after the first five: they have ended, the 20,000 younger ones have not.
    expect(limiter.sweep(60_000)).toBe(6)
    expect(limiter.size()).toBe(20_000)
    // Nothing has ended: one look.
    expect(limiter.sweep(60_001)).toBe(1)
    // Every request sweeps first: once the 20,000 have ended, the next request clears them and starts its own window.
    limiter.admit(from('10.0.0.1'), null, 90_000)
    expect(limiter.size()).toBe(1)
  })

  test('a window that ended starts over: the client is admitted again', () => {
    const limiter = globalRateLimit({ limit: 1, trustProxy: true })
    limiter.admit(from('192.0.2.1'), null, 0)
    expect(() => limiter.admit(from('192.0.2.1'), null, 59_999)).toThrow(RateLimited)
    limiter.admit(from('192.0.2.1'), null, 60_000)
  })
})
