import { isIPv4, isIPv6 } from 'node:net'
import type { Server } from 'bun'
import { Elysia } from 'elysia'

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

/** The eight 16-bit groups of an IPv6 address (an embedded dotted IPv4 tail becomes the last two). */
function ipv6Groups(ip: string): number[] {
  let text = ip
  const tail: number[] = []
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number)
    tail.push((a << 8) | b, (c << 8) | d)
    text = text.slice(0, -dotted[1].length)
    if (!text.endsWith('::')) text = text.slice(0, -1) // the ':' before the dotted part
  }
  const [head, rest] = text.split('::')
  const parse = (part: string | undefined) =>
    part
      ? part
          .split(':')
          .filter(Boolean)
          .map((g) => parseInt(g, 16))
      : []
  const front = parse(head)
  const back = [...parse(rest), ...tail]
  const fill = rest === undefined ? [] : new Array(8 - front.length - back.length).fill(0)
  return [...front, ...fill, ...back].slice(0, 8)
}

/**
 * The key every per-IP limit counts under: an IPv4 address as it is, an IPv6 address by its /64 (one subscriber's
 * network, where every address is theirs to use: `2001:db8:1:2::/64`), and an IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`) as the IPv4 address it is. Anything else (no address known) is its own key.
 * Applying it to its own result changes nothing.
 */
export function ipKey(ip: string): string {
  const address = ip.replace(/%.*$/, '').replace(/\/64$/, '').toLowerCase()
  if (isIPv4(address)) return address
  if (!isIPv6(address)) return ip
  const groups = ipv6Groups(address)
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.')
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`
}

export function clientIp(trustProxy: boolean) {
  return new Elysia({ name: 'client-ip' }).derive({ as: 'global' }, ({ request, server }) => ({
    clientIp: resolveClientIp(request, server, trustProxy),
  }))
}
