/**
 * A JWT must carry an expiry (issue 17): every token the service issues has `exp` (7 days), so one without it can
 * only be forged or minted elsewhere, and would never expire. Tokens here are signed with the real secret, so each
 * refusal is about the claim alone.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { registerUser, startTestServer, type TestServer } from '../helpers'

const TIMEOUT = 60_000
let t: TestServer
let account: Awaited<ReturnType<typeof registerUser>>

beforeAll(async () => {
  t = await startTestServer()
  account = await registerUser(t)
}, TIMEOUT)
afterAll(() => t?.stop(), TIMEOUT)

const b64url = (value: string) => Buffer.from(value).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)
function signed(payload: Record<string, unknown>) {
  const input = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64url(JSON.stringify(payload))}`
  return `${input}.${createHmac('sha256', t.env.JWT_SECRET).update(input).digest('base64url')}`
}
const me = (token: string) => t.json('/api/auth/me', { headers: { authorization: `Bearer ${token}` } })

describe('JWT expiry is required', () => {
  test(
    'with exp in the future: 200 (the control); without exp, or a non-numeric one, or past: 401',
    async () => {
      const sub = String(account.user.id)
      // The session of a token the server issued: the refusals below are about `exp` alone.
      const sid = JSON.parse(Buffer.from(account.token.split('.')[1], 'base64url').toString()).sid
      expect((await me(signed({ sub, sid, iat: now(), exp: now() + 3600 }))).status).toBe(200)
      for (const payload of [
        { sub, sid },
        { sub, sid, iat: now() },
        { sub, sid, exp: String(now() + 3600) },
        { sub, sid, exp: null },
        { sub, sid, exp: now() - 10 },
      ]) {
        const res = await me(signed(payload))
        expect(res.status, JSON.stringify(payload)).toBe(401)
        expect(res.body.error).toBe('Invalid or expired token')
      }
      // The service's own tokens carry exp.
      const [, payload] = account.token.split('.')
      expect(typeof JSON.parse(Buffer.from(payload, 'base64url').toString()).exp).toBe('number')
    },
    TIMEOUT,
  )
})
