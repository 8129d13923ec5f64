import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config'
import { DomainError } from '../../src/errors'
import { httpErrorOf } from '../../src/http/errors'
import { checkExpiryBound, parseExpiry, uploadExpiry } from '../../src/modules/images/expiry'

const status = (fn: () => unknown) => {
  try {
    fn()
  } catch (error) {
    return error instanceof DomainError ? httpErrorOf(error)?.status : error
  }
  return 'no error'
}

describe('parseExpiry', () => {
  test('seconds as a positive integer, in a string or a JSON number', () => {
    expect(parseExpiry('1')).toBe(1)
    expect(parseExpiry('3600')).toBe(3600)
    expect(parseExpiry(' 90 ')).toBe(90)
    expect(parseExpiry(86400)).toBe(86400)
  })

  test('ISO 8601 durations', () => {
    expect(parseExpiry('PT10M')).toBe(600)
    expect(parseExpiry('P7D')).toBe(7 * 86400)
    expect(parseExpiry('P1DT2H')).toBe(86400 + 7200)
    expect(parseExpiry('PT1H30M15S')).toBe(3600 + 1800 + 15)
    expect(parseExpiry('P2W')).toBe(14 * 86400)
    expect(parseExpiry('P1Y')).toBe(365 * 86400)
    expect(parseExpiry('P1M')).toBe(30 * 86400) // months before T, minutes after it
    expect(parseExpiry('pt5m')).toBe(300)
    expect(parseExpiry('PT90S')).toBe(90)
  })

  test('malformed values, zero and negatives: 400', () => {
    for (const bad of [
      '',
      'abc',
      'P',
      'PT',
      'P1DT',
      'P1H',
      'PT1D',
      'T1H',
      '1.5',
      'PT1.5S',
      '1e3',
      '0x10',
      '10m',
      'P-1D',
      '5 days',
      '+5',
      null,
      true,
      {},
      1.5,
    ]) {
      expect([bad, status(() => parseExpiry(bad))]).toEqual([bad, 400])
    }
    for (const zeroish of ['0', 'PT0S', 'P0D', 0, -5, '-5']) {
      expect([zeroish, status(() => parseExpiry(zeroish))]).toEqual([zeroish, 400])
    }
  })

  test('the bound: above MAX_EXPIRY, or too large to count, is 400', () => {
    expect(checkExpiryBound(100, 100)).toBe(100)
    expect(status(() => checkExpiryBound(101, 100))).toBe(400)
    expect(status(() => checkExpiryBound(parseExpiry('9'.repeat(40)), 1e9))).toBe(400)
  })
})

describe('uploadExpiry', () => {
  const never = { maxSeconds: 1000, anonDefaultSeconds: 0 }
  const anonDay = { maxSeconds: 100_000, anonDefaultSeconds: 86_400 }
  test('no field or an empty one: never, or the anonymous default for anonymous uploads', () => {
    expect(uploadExpiry(undefined, never, false)).toBeNull()
    expect(uploadExpiry('', never, true)).toBeNull()
    expect(uploadExpiry(undefined, anonDay, false)).toBeNull()
    expect(uploadExpiry('  ', anonDay, true)).toBe(86_400)
  })
  test('accounts are bounded by MAX_EXPIRY; anonymous uploads also by their default when it is set', () => {
    expect(uploadExpiry('1000', never, false)).toBe(1000)
    expect(status(() => uploadExpiry('1001', never, false))).toBe(400)
    expect(uploadExpiry('PT1H', anonDay, true)).toBe(3600)
    expect(uploadExpiry('P1D', anonDay, true)).toBe(86_400)
    expect(status(() => uploadExpiry('P2D', anonDay, true))).toBe(400)
    expect(uploadExpiry('P1DT1H', anonDay, false)).toBe(90_000)
  })
})

describe('config', () => {
  test('MAX_EXPIRY defaults to a year; ANON_DEFAULT_EXPIRY to never', () => {
    const config = loadConfig({})
    expect(config.expiry).toEqual({ maxSeconds: 365 * 86400, anonDefaultSeconds: 0 })
    expect(config.limits.reportsPerHour).toBe(5)
  })
  test('bad values stop startup naming the variable', () => {
    expect(() => loadConfig({ MAX_EXPIRY: '0' })).toThrow(/MAX_EXPIRY/)
    expect(() => loadConfig({ MAX_EXPIRY: '1h' })).toThrow(ConfigError)
    expect(() => loadConfig({ ANON_DEFAULT_EXPIRY: '-1' })).toThrow(/ANON_DEFAULT_EXPIRY/)
    expect(() => loadConfig({ MAX_EXPIRY: '60', ANON_DEFAULT_EXPIRY: '61' })).toThrow(/ANON_DEFAULT_EXPIRY/)
    expect(() => loadConfig({ REPORTS_PER_HOUR: '0' })).toThrow(/REPORTS_PER_HOUR/)
  })
})
