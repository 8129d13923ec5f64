import { badRequest } from '../../errors'

/**
 * Expiry requests: a positive whole number of seconds, or an ISO 8601 duration (`PT10M`, `P7D`, `P1DT2H`, `P2W`).
 * Durations take whole numbers only; a year counts 365 days and a month 30 days (an expiry is a length of time, not a
 * calendar date). Case-insensitive.
 */
const DURATION = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/
const SECONDS = /^\d+$/
const UNITS = [365 * 86400, 30 * 86400, 7 * 86400, 86400, 3600, 60, 1]

const MALFORMED = 'expires must be a positive number of seconds or an ISO 8601 duration such as PT10M, P7D or P1DT2H'

/** Seconds of an `expires` value (a string from a form or JSON, or a JSON number); 400 when it is not one. */
export function parseExpiry(value: unknown): number {
  let seconds: number
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw badRequest(MALFORMED)
    seconds = value
  } else if (typeof value === 'string') {
    const text = value.trim().toUpperCase()
    if (SECONDS.test(text) || /^-\d+$/.test(text)) {
      seconds = Number(text)
    } else {
      const match = DURATION.exec(text)
      // "P" and "P1DT" carry no amount: the regex alone would take them.
      if (!match || text === 'P' || text.endsWith('T')) throw badRequest(MALFORMED)
      seconds = UNITS.reduce((sum, unit, i) => sum + Number(match[i + 1] ?? 0) * unit, 0)
    }
  } else {
    throw badRequest(MALFORMED)
  }
  if (!(seconds > 0)) throw badRequest('expires must be greater than zero')
  return seconds
}

/** Refuses an expiry above `max` seconds (also catches amounts too large to count exactly). */
export function checkExpiryBound(seconds: number, max: number, who = '') {
  if (!Number.isSafeInteger(seconds) || seconds > max) throw badRequest(`expires must be at most ${max} seconds${who}`)
  return seconds
}

export interface ExpiryPolicy {
  maxSeconds: number
  anonDefaultSeconds: number
}

/**
 * The expiry in seconds an upload gets, or null for never. An empty field counts as not given. Anonymous uploads get
 * ANON_DEFAULT_EXPIRY when they ask for none, and when it is set they may not ask for longer.
 */
export function uploadExpiry(field: string | undefined, policy: ExpiryPolicy, anonymous: boolean): number | null {
  const anonDefault = anonymous && policy.anonDefaultSeconds > 0 ? policy.anonDefaultSeconds : null
  if (field === undefined || field.trim() === '') return anonDefault
  const seconds = parseExpiry(field)
  if (anonDefault !== null) return checkExpiryBound(seconds, anonDefault, ' for anonymous uploads')
  return checkExpiryBound(seconds, policy.maxSeconds)
}

/** The moment `seconds` from `now` (ms), as stored. */
export const expiryDate = (seconds: number | null, now: number) =>
  seconds === null ? null : new Date(now + seconds * 1000)

/** The expiries the pages offer (the upload page, the dashboard), as the API takes them. */
const EXPIRY_CHOICES = [
  { value: 'PT1H', label: '1 hour' },
  { value: 'P1D', label: '1 day' },
  { value: 'P7D', label: '1 week' },
  { value: 'P30D', label: '30 days' },
  { value: 'P365D', label: '1 year' },
] as const

/** The choices within the server's bound (MAX_EXPIRY): a page never offers what the API would refuse. */
export const expiryChoices = (maxSeconds: number) => EXPIRY_CHOICES.filter((c) => parseExpiry(c.value) <= maxSeconds)
