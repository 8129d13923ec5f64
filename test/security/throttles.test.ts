import { afterAll, afterEach, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { parse } from 'node-html-parser'
import type { ServerOverrides } from '../../src/server'
import { jsonBody, registerUser, type TestServer, testClock, whileHealthy } from '../helpers'
import { expectRateLimitHeaders, send, startServer } from './support'

// Every server here trusts X-Forwarded-For, so one test process can play several client addresses.
const servers: TestServer[] = []
async function fresh(env: Record<string, string> = {}, overrides: ServerOverrides = {}) {
  const t = await startServer({ TRUST_PROXY: 'true', GLOBAL_RATE_LIMIT: '100000', ...env }, overrides)
  servers.push(t)
  return t
}
afterAll(async () => {
  await Promise.all(servers.map((t) => t.stop()))
})

/** Counts the password hashes verified (logins and album passwords both use Bun.password.verify). */
let verify: ReturnType<typeof spyOn>
beforeAll(() => {
  verify = spyOn(Bun.password, 'verify')
})
afterEach(() => verify.mockClear())
afterAll(() => verify.mockRestore())

const from = (ip: string) => ({ 'x-forwarded-for': ip })
const statuses = (list: { status: number }[]) => list.map((r) => r.status)
const counts = (list: number[]) => {
  const tally: Record<number, number> = {}
  for (const s of list) tally[s] = (tally[s] ?? 0) + 1
  return tally
}

const PASSWORD = 'the album password'

async function protectedAlbum(t: TestServer) {
  const owner = await registerUser(t)
  const id = (await t.json('/api/albums', send('POST', { title: 'Guarded', isPublic: true }, owner.bearer))).body.album
    .id as string
  expect((await t.json(`/api/albums/${id}`, send('PUT', { password: PASSWORD }, owner.bearer))).status).toBe(200)
  return { id, owner }
}

/** One password guess through one of the three doors: the page by query, the page's form, the API. */
function guess(t: TestServer, door: number, id: string, password: string, ip: string) {
  if (door === 0) return t.fetch(`/a/${id}?password=${encodeURIComponent(password)}`, { headers: from(ip) })
  if (door === 1) {
    return t.fetch(`/a/${id}`, {
      method: 'POST',
      headers: { ...from(ip), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ password }).toString(),
    })
  }
  return t.fetch(`/api/albums/${id}`, { headers: { ...from(ip), 'x-album-password': password } })
}

describe('album passwords (defaults: 10 wrong per address, 20 per album, per 15 minutes)', () => {
  test('40 wrong passwords from one address, through the pages and the API: 10 are checked (403), 30 refused (429) without hashing', async () => {
    const t = await fresh()
    const { id } = await protectedAlbum(t)
    const answers = await whileHealthy(t, async () => {
      const list = []
      for (let i = 0; i < 40; i++) list.push(await guess(t, i % 3, id, `wrong ${i}`, '198.51.100.1'))
      return list
    })
    expect(statuses(answers)).toEqual([...Array(10).fill(403), ...Array(30).fill(429)])
    expect(verify).toHaveBeenCalledTimes(10)
    for (const [i, res] of answers.entries()) {
      if (res.status !== 429) continue
      const h = expectRateLimitHeaders(res.headers, { retryAfter: true })
      expect(h).toMatchObject({ limit: 10, remaining: 0 })
      expect(h.retryAfter).toBeGreaterThan(800)
      expect(h.retryAfter).toBeLessThanOrEqual(900)
      if (i % 3 === 2) {
        expect((await res.json()).error).toContain('Too many wrong album passwords from this address')
      } else {
        // The pages answer the form again, with the wait, as HTML.
        expect(res.headers.get('content-type')).toStartWith('text/html')
        const doc = parse(await res.text())
        expect(doc.querySelector('form.password-form')?.getAttribute('action')).toBe(`/a/${id}`)
        expect(doc.querySelector('.error')!.text).toMatch(/Too many wrong passwords\. Try again in \d+ minutes\./)
        expect(doc.querySelector('title')!.text).not.toContain('Guarded')
      }
    }
    // Throttled means throttled: the right password waits too (it is checked before the hash, which costs the same).
    expect((await guess(t, 2, id, PASSWORD, '198.51.100.1')).status).toBe(429)
    // Another address still opens it.
    expect((await guess(t, 2, id, PASSWORD, '198.51.100.2')).status).toBe(200)
  })

  test('per album across addresses: 20 wrong passwords from 20 addresses, then the album refuses guesses from anyone', async () => {
    const t = await fresh()
    const { id, owner } = await protectedAlbum(t)
    const other = await protectedAlbum(t)
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) => guess(t, i % 3, id, `wrong ${i}`, `203.0.113.${i + 1}`)),
    )
    expect(counts(statuses(answers))).toEqual({ 403: 20, 429: 5 })
    expect(verify).toHaveBeenCalledTimes(20)
    // Which five were refused depends on the order they arrived in (the doors answer alike): asked through the API
    // now, from a new address, the album says why.
    const refused = await guess(t, 2, id, 'wrong again', '203.0.113.100')
    expect(refused.status).toBe(429)
    expect((await refused.json()).error).toContain('Too many wrong passwords for this album')
    expect((await guess(t, 0, id, PASSWORD, '203.0.113.200')).status).toBe(429)
    // Other albums are not affected, and the owner never needs the password.
    expect((await guess(t, 2, other.id, PASSWORD, '203.0.113.200')).status).toBe(200)
    expect((await t.json(`/api/albums/${id}`, { headers: owner.bearer })).status).toBe(200)
  })

  test('a right password is not a failure: visitors who know it are never throttled', async () => {
    const t = await fresh()
    const { id } = await protectedAlbum(t)
    const answers = []
    for (let i = 0; i < 15; i++) answers.push(await guess(t, i % 3, id, PASSWORD, '198.51.100.7'))
    expect(counts(statuses(answers))).toEqual({ 200: 15 })
    expect((await guess(t, 2, id, 'wrong', '198.51.100.7')).status).toBe(403)
  })

  test('the window resets: still refused on its last millisecond; once it has passed, guesses are checked again', async () => {
    const clock = testClock(Date.now())
    const t = await fresh(
      { PASSWORD_FAILURES_WINDOW_SECONDS: '300', ALBUM_PASSWORD_FAILURES_PER_IP: '2' },
      { now: clock.now },
    )
    const { id } = await protectedAlbum(t)
    const first = []
    for (let i = 0; i < 3; i++) first.push(await guess(t, 2, id, 'wrong', '198.51.100.9'))
    expect(statuses(first)).toEqual([403, 403, 429])
    // The configured window, all of it still to come: the clock stands still.
    expect(first[2].headers.get('retry-after')).toBe('300')
    clock.set(clock.now() + 300_000 - 1)
    const last = await guess(t, 2, id, 'wrong', '198.51.100.9')
    expect(last.status).toBe(429)
    expect(last.headers.get('retry-after')).toBe('1')
    clock.set(clock.now() + 1)
    expect((await guess(t, 2, id, 'wrong', '198.51.100.9')).status).toBe(403)
    expect((await guess(t, 2, id, PASSWORD, '198.51.100.9')).status).toBe(200)
  })
})

const login = (t: TestServer, username: string, password: string, ip: string) =>
  t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username, password }, from(ip)) })

describe('logins (defaults: 10 failures per account across addresses, 30 per address, per 15 minutes)', () => {
  test('500 wrong logins for one account from one address, all at once: 10 are verified (401), the rest 429 without hashing', async () => {
    const t = await fresh()
    const user = await registerUser(t)
    verify.mockClear()
    const answers = await whileHealthy(t, () =>
      Promise.all(Array.from({ length: 500 }, () => login(t, user.user.username, 'wrong password', '198.51.100.20'))),
    )
    expect(counts(statuses(answers))).toEqual({ 401: 10, 429: 490 })
    expect(verify).toHaveBeenCalledTimes(10)
    const refused = answers.find((r) => r.status === 429)!
    expect(refused.body.error).toContain('Too many failed logins for this account')
    expectRateLimitHeaders(refused.headers, { retryAfter: true })
    // Throttled before the hash: the right password is refused too, until the window ends.
    expect((await login(t, user.user.username, user.password, '198.51.100.21')).status).toBe(429)
  }, 60_000)

  test('per account across addresses, whichever of its names is typed; an unknown name per name, the same way', async () => {
    const t = await fresh({ LOGIN_FAILURES_PER_ACCOUNT: '4' })
    const user = await registerUser(t)
    // The account's two names count together: 2 guesses under the username and 2 under the email use up its 4.
    const names = [user.user.username.toUpperCase(), user.user.email, user.user.username, user.user.email.toUpperCase()]
    const guesses = []
    for (const [i, name] of names.entries()) guesses.push(await login(t, name, 'wrong password', `192.0.2.${i + 1}`))
    expect(statuses(guesses)).toEqual([401, 401, 401, 401])
    for (const name of [user.user.username, user.user.email]) {
      // A fifth address changes nothing: the count is the account's.
      const refused = await login(t, name, user.password, '192.0.2.5')
      expect(refused.status).toBe(429)
      const h = expectRateLimitHeaders(refused.headers, { retryAfter: true })
      expect(h).toMatchObject({ limit: 4, remaining: 0 })
      expect(refused.body.error).toBe(`Too many failed logins for this account: try again in ${h.retryAfter} s`)
    }
    // A name no account answers to is counted as typed (lower-cased), so probing it is throttled as well.
    const probes = []
    for (let i = 0; i < 6; i++) probes.push(await login(t, 'Nobody-By-This-Name', 'wrong password', `192.0.2.${i % 2}`))
    expect(statuses(probes)).toEqual([401, 401, 401, 401, 429, 429])
    expect((await login(t, 'nobody-by-this-name', 'wrong password', '192.0.2.9')).status).toBe(429)
    // Typing an account's key as a name reaches only that name's own count, never the account's.
    const other = await registerUser(t)
    for (let i = 0; i < 5; i++) await login(t, `login-account:${other.user.id}`, 'wrong password', '192.0.2.10')
    expect((await login(t, other.user.username, other.password, '192.0.2.11')).status).toBe(200)
  })

  test('per address: failures with many names from one address, then that address is refused for any name', async () => {
    const t = await fresh({ LOGIN_FAILURES_PER_IP: '6' })
    const user = await registerUser(t)
    const answers = []
    for (let i = 0; i < 8; i++) answers.push(await login(t, `someone-${i}`, 'wrong password', '2001:db8:5:6::1'))
    expect(statuses(answers)).toEqual([401, 401, 401, 401, 401, 401, 429, 429])
    expect(answers[7].body.error).toContain('Too many failed logins from this address')
    // The whole /64 is one address; the next /64 is not.
    expect((await login(t, user.user.username, user.password, '2001:db8:5:6:ffff::9')).status).toBe(429)
    expect((await login(t, user.user.username, user.password, '2001:db8:5:7::1')).status).toBe(200)
  })

  test("a successful login starts the account's count over, whichever name it used; its address's failures still count", async () => {
    const t = await fresh({ LOGIN_FAILURES_PER_ACCOUNT: '3', LOGIN_FAILURES_PER_IP: '4' })
    const user = await registerUser(t)
    const name = user.user.username
    const ip = '198.51.100.30'
    for (let i = 0; i < 2; i++) expect((await login(t, name, 'wrong password', ip)).status).toBe(401)
    expect((await login(t, user.user.email, user.password, ip)).status).toBe(200)
    // Without the reset the account would be at 3 of 3 after one more failure; with it, two more are plain 401s...
    for (let i = 0; i < 2; i++) expect((await login(t, name, 'wrong password', ip)).status).toBe(401)
    // ...and the next attempt is refused for the address (4 failures), not for the account (2 since the success).
    const refused = await login(t, name, user.password, ip)
    expect(refused.status).toBe(429)
    expect(refused.body.error).toContain('from this address')
    expect((await login(t, name, user.password, '198.51.100.31')).status).toBe(200)
  })

  test('the window resets: still refused on its last millisecond; once it has passed, the account may try again', async () => {
    const clock = testClock(Date.now())
    const t = await fresh(
      { LOGIN_FAILURES_PER_ACCOUNT: '2', PASSWORD_FAILURES_WINDOW_SECONDS: '300' },
      { now: clock.now },
    )
    const user = await registerUser(t)
    const answers = []
    for (let i = 0; i < 3; i++) answers.push(await login(t, user.user.username, 'wrong password', '198.51.100.40'))
    expect(statuses(answers)).toEqual([401, 401, 429])
    expect(answers[2].headers.get('retry-after')).toBe('300')
    clock.set(clock.now() + 300_000 - 1)
    const last = await login(t, user.user.username, user.password, '198.51.100.40')
    expect(last.status).toBe(429)
    expect(last.headers.get('retry-after')).toBe('1')
    clock.set(clock.now() + 1)
    expect((await login(t, user.user.username, user.password, '198.51.100.40')).status).toBe(200)
  })
})
