import { lookup } from 'node:dns/promises'
import { isIP, type LookupFunction } from 'node:net'
import { badRequest } from '../errors'

/**
 * The address rules for every outgoing request to a URL a user gave (webhooks, uploads from a URL): one copy, so a
 * range refused for one is refused for all. Knows no feature.
 */

/** A user's URL as a target: absolute, http or https (relative to `base`: a redirect's Location). Invalid otherwise. */
export function parseHttpUrl(raw: string, base?: URL): URL {
  let url: URL
  try {
    url = new URL(raw, base)
  } catch {
    throw badRequest('must be an absolute http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw badRequest(`must be http or https (not ${url.protocol})`)
  }
  return url
}

/** A target that must not be reached (SSRF): its address is loopback, private, link-local or otherwise not public. */
export class RefusedAddressError extends Error {}

type Cidr4 = [number, number]

const ip4 = (a: number, b: number, c: number, d: number) => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0

/** IPv4 ranges that are not public unicast (RFC 6890 and friends). */
const BLOCKED_V4: Cidr4[] = [
  [ip4(0, 0, 0, 0), 8], // "this network", 0.0.0.0
  [ip4(10, 0, 0, 0), 8], // private
  [ip4(100, 64, 0, 0), 10], // carrier-grade NAT
  [ip4(127, 0, 0, 0), 8], // loopback
  [ip4(169, 254, 0, 0), 16], // link-local (cloud metadata lives here)
  [ip4(172, 16, 0, 0), 12], // private
  [ip4(192, 0, 0, 0), 24], // IETF protocol assignments
  [ip4(192, 0, 2, 0), 24], // documentation
  [ip4(192, 88, 99, 0), 24], // 6to4 relay anycast
  [ip4(192, 168, 0, 0), 16], // private
  [ip4(198, 18, 0, 0), 15], // benchmarking
  [ip4(198, 51, 100, 0), 24], // documentation
  [ip4(203, 0, 113, 0), 24], // documentation
  [ip4(224, 0, 0, 0), 4], // multicast
  [ip4(240, 0, 0, 0), 4], // reserved, broadcast
]

function parseIPv4(text: string): number | null {
  const parts = text.split('.')
  if (parts.length !== 4) return null
  let n = 0
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return null
    n = n * 256 + Number(part)
  }
  return n
}

function v4Blocked(n: number): boolean {
  return BLOCKED_V4.some(([base, bits]) => (bits === 0 ? true : n >>> (32 - bits) === base >>> (32 - bits)))
}

/** Eight 16-bit groups, or null. Accepts `::` shorthand, an embedded dotted IPv4 tail, and a zone (`%eth0`, ignored). */
function parseIPv6(text: string): number[] | null {
  let s = text
    .replace(/^\[|\]$/g, '')
    .split('%')[0]
    .toLowerCase()
  const lastColon = s.lastIndexOf(':')
  if (lastColon < 0) return null
  if (s.slice(lastColon + 1).includes('.')) {
    // a.b.c.d at the end stands for the last two groups.
    const v4 = parseIPv4(s.slice(lastColon + 1))
    if (v4 === null) return null
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`
  }
  const halves = s.split('::')
  if (halves.length > 2) return null
  const group = (g: string) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)
  const head = halves[0] ? halves[0].split(':').map(group) : []
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':').map(group) : []
  if ([...head, ...tail].some(Number.isNaN)) return null
  if (halves.length === 1) return head.length === 8 ? head : null
  if (head.length + tail.length > 7) return null
  return [...head, ...Array(8 - head.length - tail.length).fill(0), ...tail]
}

function v6Blocked(g: number[]): boolean {
  const embedded = (hi: number, lo: number) => v4Blocked(((hi << 16) | lo) >>> 0)
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 8)) return true // ::
  if (zeros(0, 7) && g[7] === 1) return true // ::1
  if (zeros(0, 5) && g[5] === 0xffff) return embedded(g[6], g[7]) // ::ffff:a.b.c.d, IPv4-mapped
  if (zeros(0, 6)) return embedded(g[6], g[7]) // ::a.b.c.d, IPv4-compatible (deprecated)
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return embedded(g[6], g[7]) // ::ffff:0:a.b.c.d, IPv4-translated
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return embedded(g[6], g[7]) // 64:ff9b::/96 NAT64
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true // 64:ff9b:1::/48 local NAT64
  if (g[0] === 0x2002) return embedded(g[1], g[2]) // 6to4 carries an IPv4 address
  if (g[0] === 0x2001 && g[1] === 0) return true // Teredo (an obfuscated IPv4 address)
  if (g[0] === 0x2001 && g[1] === 0xdb8) return true // documentation
  if (g[0] === 0x100 && zeros(1, 4)) return true // discard-only 100::/64
  if ((g[0] & 0xfe00) === 0xfc00) return true // fc00::/7 unique local
  if ((g[0] & 0xffc0) === 0xfe80) return true // fe80::/10 link-local
  if ((g[0] & 0xffc0) === 0xfec0) return true // fec0::/10 site-local (deprecated)
  if ((g[0] & 0xff00) === 0xff00) return true // multicast
  return false
}

/** True for any address a user's URL must not reach: loopback, private, link-local, unspecified, multicast, reserved. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '')
  const v4 = parseIPv4(bare)
  if (v4 !== null) return v4Blocked(v4)
  const v6 = parseIPv6(bare)
  // Not an address we can read: refuse rather than guess.
  return v6 === null ? true : v6Blocked(v6)
}

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/**
 * Resolves a host name the way a connection would (getaddrinfo: /etc/hosts, DNS), and refuses it when any of its
 * addresses is not public, unless `allowPrivate`. An IP literal is checked as it is.
 */
export async function resolvePublic(hostname: string, allowPrivate: boolean): Promise<ResolvedAddress[]> {
  const host = hostname.replace(/^\[|\]$/g, '')
  let addresses: ResolvedAddress[]
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) as 4 | 6 }]
  } else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => ({
        address: a.address,
        family: a.family as 4 | 6,
      }))
    } catch {
      throw new RefusedAddressError(`cannot resolve ${host}`)
    }
    if (addresses.length === 0) throw new RefusedAddressError(`cannot resolve ${host}`)
  }
  if (!allowPrivate) {
    const refused = addresses.find((a) => isPrivateAddress(a.address))
    if (refused) {
      // The address itself is never named: it would tell a caller what internal names resolve to.
      throw new RefusedAddressError(
        isIP(host)
          ? `${host} is not allowed (a private or reserved address)`
          : `${host} is not allowed (it resolves to a private or reserved address)`,
      )
    }
  }
  return addresses
}

/** Answers a node:net lookup with `addresses` only: those of the family asked for when there are any. */
function answerLookup(
  addresses: ResolvedAddress[],
  options: Parameters<LookupFunction>[1],
  callback: Parameters<LookupFunction>[2],
) {
  const wanted =
    options?.family === 4 || options?.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses
  const list = wanted.length ? wanted : addresses
  if (options?.all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, list)
  else callback(null, list[0].address, list[0].family)
}

/**
 * A lookup for node:http(s) `request` that resolves through resolvePublic: every address is checked at the moment the
 * connection uses it, so a name that changes its answer (DNS rebinding) still cannot reach a private address.
 * IP literals never reach a lookup: check them with resolvePublic first.
 */
export const checkedLookup =
  (allowPrivate: boolean): LookupFunction =>
  (hostname, options, callback) => {
    resolvePublic(hostname, allowPrivate).then(
      (addresses) => answerLookup(addresses, options, callback),
      (error) => callback(error as NodeJS.ErrnoException, '', 4),
    )
  }

/** A lookup that answers only `addresses`, already checked: the connection goes where the check looked, nowhere else. */
export const pinnedLookup =
  (addresses: ResolvedAddress[]): LookupFunction =>
  (_hostname, options, callback) =>
    answerLookup(addresses, options, callback)
