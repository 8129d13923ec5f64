import { describe, expect, test } from 'bun:test'
import { ipKey } from '../../src/http/client-ip'

describe('ipKey: the key of every per-IP limit', () => {
  test('an IPv4 address is its own key', () => {
    expect(ipKey('203.0.113.7')).toBe('203.0.113.7')
    expect(ipKey('203.0.113.8')).toBe('203.0.113.8')
  })

  test('IPv6 addresses are grouped by their /64, whatever their spelling', () => {
    const net = '2001:db8:1:2::/64'
    for (const ip of [
      '2001:db8:1:2::1',
      '2001:db8:1:2:ffff:ffff:ffff:ffff',
      '2001:0DB8:0001:0002:0000:0000:0000:0099',
      '2001:db8:1:2:a::b',
      'fe80::1%eth0'.replace('fe80::1', '2001:db8:1:2::7'),
    ]) {
      expect(ipKey(ip)).toBe(net)
    }
    // The next /64 is another subscriber.
    expect(ipKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64')
    expect(ipKey('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(ipKey('::1')).toBe('0:0:0:0::/64')
  })

  test('an IPv4-mapped IPv6 address counts as the IPv4 address, dotted or in hex', () => {
    expect(ipKey('::ffff:203.0.113.7')).toBe('203.0.113.7')
    expect(ipKey('::FFFF:cb00:7107')).toBe('203.0.113.7')
    expect(ipKey('0:0:0:0:0:ffff:203.0.113.7')).toBe('203.0.113.7')
  })

  test('a key is its own key (stored keys can be keyed again), and what is not an address stays as it is', () => {
    for (const ip of ['203.0.113.7', '2001:db8:1:2::1', '::ffff:203.0.113.7', 'unknown'])
      expect(ipKey(ipKey(ip))).toBe(ipKey(ip))
    expect(ipKey('unknown')).toBe('unknown')
    expect(ipKey('not-an-address')).toBe('not-an-address')
  })
})
