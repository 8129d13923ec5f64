/**
 * Sessions that end (issue 23): every JWT carries a session id (`sid`) checked on each request. Logout, ending a session
 * from the list, a password change (all but the current one), a ban and a deleted account each make a token fail; the
 * last use is buffered and written in batches.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { sessions, users } from '../../src/db/schema'
import { jsonBody, makeAdmin, registerUser, startTestServer, type TestServer } from '../helpers'

const TIMEOUT = 60_000
let t: TestServer

beforeAll(async () => {
  // Wrong current passwords count in the account's failed-login window: a small one, to reach it.
  t = await startTestServer({ LOGIN_FAILURES_PER_ACCOUNT: '3', TRUST_PROXY: 'true' })
}, TIMEOUT)
afterAll(() => t?.stop(), TIMEOUT)

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const me = (token: string) => t.json('/api/auth/me', { headers: bearer(token) })
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())

async function login(username: string, password: string, headers: Record<string, string> = {}) {
  const res = await t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username, password }, headers) })
  expect(res.status).toBe(200)
  return res.body.token as string
}
const listSessions = (token: string) => t.json('/api/account/sessions', { headers: bearer(token) })
const logout = (token: string) => t.fetch('/api/auth/logout', { method: 'POST', headers: bearer(token) })
const endSession = (token: string, id: string) =>
  t.json(`/api/account/sessions/${encodeURIComponent(id)}`, { method: 'DELETE', headers: bearer(token) })
const changePassword = (token: string, body: Record<string, unknown>) =>
  t.json('/api/account/password', { method: 'PUT', ...jsonBody(body, bearer(token)) })

function expectError(res: { status: number; body: any }, status: number) {
  expect(res.status).toBe(status)
  expect(typeof res.body.error).toBe('string')
}

describe('the session id in every JWT', () => {
  test('register and login each start a session of their own; the token carries its id', async () => {
    const account = await registerUser(t)
    const second = await login(account.user.username, account.password)
    const [a, b] = [claimsOf(account.token).sid, claimsOf(second).sid]
    expect(typeof a).toBe('string')
    expect(typeof b).toBe('string')
    expect(a).not.toBe(b)
    expect(claimsOf(second).sub).toBe(String(account.user.id))
  })

  test('a correctly signed token without a session (issued before sessions), or with another account’s: 401', async () => {
    const account = await registerUser(t)
    const other = await registerUser(t)
    const now = Math.floor(Date.now() / 1000)
    const sign = (payload: Record<string, unknown>) => {
      const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
      const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ iat: now, exp: now + 3600, ...payload })}`
      return `${input}.${createHmac('sha256', t.env.JWT_SECRET).update(input).digest('base64url')}`
    }
    const sub = String(account.user.id)
    // The control: the same claims with the account's own session.
    expect((await me(sign({ sub, sid: claimsOf(account.token).sid }))).status).toBe(200)
    for (const sid of [undefined, '', 'no-such-session', claimsOf(other.token).sid, 42, 'x'.repeat(65), 'a b']) {
      const res = await me(sign({ sub, sid }))
      expect(res.status, String(sid)).toBe(401)
      expect(res.body.error).toBe('Invalid or expired token')
    }
  })
})

describe('POST /api/auth/logout', () => {
  test('204; the token stops working, the account’s other sessions do not', async () => {
    const account = await registerUser(t)
    const other = await login(account.user.username, account.password)
    expect((await me(account.token)).status).toBe(200)
    const res = await logout(account.token)
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    expectError(await me(account.token), 401)
    expect((await me(other)).status).toBe(200)
    // Once ended, it cannot log out again.
    expect((await logout(account.token)).status).toBe(401)
  })

  test('without a token: 401', async () => {
    expect((await t.fetch('/api/auth/logout', { method: 'POST' })).status).toBe(401)
  })
})

describe('GET and DELETE /api/account/sessions', () => {
  test('lists the live sessions with their user agent, address and which one is the caller’s', async () => {
    const account = await registerUser(t)
    const phone = await login(account.user.username, account.password, {
      'user-agent': 'Mozilla/5.0 (iPhone) Safari/604.1',
      'x-forwarded-for': '203.0.113.9',
    })
    const res = await listSessions(phone)
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.sessions.length).toBe(2)
    const [newest, first] = res.body.sessions
    expect(newest).toMatchObject({
      id: claimsOf(phone).sid,
      userAgent: 'Mozilla/5.0 (iPhone) Safari/604.1',
      ip: '203.0.113.9',
      current: true,
    })
    expect(first).toMatchObject({ id: claimsOf(account.token).sid, current: false })
    for (const session of res.body.sessions) {
      expect(Date.parse(session.createdAt)).toBeGreaterThan(0)
    }
    // The session in use shows its last use at once (buffered, not yet written).
    expect(Date.parse(newest.lastUsedAt)).toBeGreaterThan(0)
    // Seen from the other session, `current` moves.
    const fromFirst = (await listSessions(account.token)).body.sessions
    expect(fromFirst.find((s: any) => s.current).id).toBe(claimsOf(account.token).sid)
  })

  test('ending one: its token is refused, the caller’s stays; an unknown or another account’s id is a 404', async () => {
    const account = await registerUser(t)
    const laptop = await login(account.user.username, account.password)
    const stranger = await registerUser(t)
    // Used once first: a session the server has seen live must still end.
    expect((await me(laptop)).status).toBe(200)

    expectError(await endSession(account.token, claimsOf(stranger.token).sid), 404)
    expect((await me(stranger.token)).status).toBe(200)
    expectError(await endSession(account.token, 'no-such-session'), 404)

    const res = await endSession(account.token, claimsOf(laptop).sid)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expectError(await me(laptop), 401)
    expect((await me(account.token)).status).toBe(200)
    expect((await listSessions(account.token)).body.sessions.map((s: any) => s.id)).toEqual([
      claimsOf(account.token).sid,
    ])
    expectError(await endSession(account.token, claimsOf(laptop).sid), 404)
  })

  test('last use is written in batches (by the flush), not on every request', async () => {
    const account = await registerUser(t)
    const sid = claimsOf(account.token).sid
    const row = async () => (await t.server.deps.db.select().from(sessions).where(eq(sessions.id, sid)))[0]
    await t.server.services.auth.flushUses()
    expect((await row()).lastUsedAt).toBeNull()
    expect((await me(account.token)).status).toBe(200)
    expect((await row()).lastUsedAt).toBeNull()
    await t.server.services.auth.flushUses()
    expect((await row()).lastUsedAt!.getTime()).toBeGreaterThan(0)
  })

  test('expired sessions are not listed, and the sweep removes them', async () => {
    const account = await registerUser(t)
    const old = await login(account.user.username, account.password)
    const { db } = t.server.deps
    await db
      .update(sessions)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(sessions.id, claimsOf(old).sid))
    expect((await listSessions(account.token)).body.sessions.length).toBe(1)
    await t.server.services.auth.sweepExpired()
    expect(
      await db
        .select()
        .from(sessions)
        .where(eq(sessions.id, claimsOf(old).sid)),
    ).toEqual([])
    expect((await me(account.token)).status).toBe(200)
  })
})

describe('PUT /api/account/password', () => {
  test('changes the password and ends every other session; the current one stays', async () => {
    const account = await registerUser(t)
    const other = await login(account.user.username, account.password)
    expect((await me(other)).status).toBe(200)
    const res = await changePassword(account.token, {
      currentPassword: account.password,
      newPassword: 'a brand new secret',
    })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expect((await me(account.token)).status).toBe(200)
    expectError(await me(other), 401)
    expect((await listSessions(account.token)).body.sessions.length).toBe(1)
    const old = await t.json('/api/auth/login', {
      method: 'POST',
      ...jsonBody({ username: account.user.username, password: account.password }),
    })
    expectError(old, 401)
    expect((await me(await login(account.user.username, 'a brand new secret'))).status).toBe(200)
  })

  test('a wrong current password or a new one outside the rules: 400, nothing changes', async () => {
    const account = await registerUser(t)
    const other = await login(account.user.username, account.password)
    expectError(
      await changePassword(account.token, { currentPassword: 'not it at all', newPassword: 'long enough' }),
      400,
    )
    expectError(await changePassword(account.token, { currentPassword: account.password, newPassword: 'short' }), 400)
    expectError(
      await changePassword(account.token, { currentPassword: account.password, newPassword: 'x'.repeat(257) }),
      400,
    )
    expectError(await changePassword(account.token, { currentPassword: account.password }), 400)
    expect((await me(other)).status).toBe(200)
    await login(account.user.username, account.password)
  })

  test('wrong current passwords count as failed logins: past the window, 429 even with the right one', async () => {
    const account = await registerUser(t)
    for (let i = 0; i < 3; i++)
      expectError(
        await changePassword(account.token, { currentPassword: `wrong ${i}!!`, newPassword: 'long enough' }),
        400,
      )
    const res = await changePassword(account.token, { currentPassword: account.password, newPassword: 'long enough' })
    expectError(res, 429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    // The login of the same account is throttled by the same window.
    const blocked = await t.json('/api/auth/login', {
      method: 'POST',
      ...jsonBody({ username: account.user.username, password: account.password }),
    })
    expectError(blocked, 429)
  })

  test('without a token: 401', async () => {
    expectError(
      await t.json('/api/account/password', {
        method: 'PUT',
        ...jsonBody({ currentPassword: 'whatever1', newPassword: 'whatever2' }),
      }),
      401,
    )
  })
})

describe('bans and deleted accounts', () => {
  test('a ban by the admin API ends every session of the account', async () => {
    const admin = await registerUser(t)
    await makeAdmin(t, admin.user.id)
    const account = await registerUser(t)
    const other = await login(account.user.username, account.password)
    expect((await me(other)).status).toBe(200)
    expect((await me(account.token)).status).toBe(200)
    const res = await t.json(`/api/admin/users/${account.user.id}`, {
      method: 'PATCH',
      ...jsonBody({ banned: true }, admin.bearer),
    })
    expect(res.status).toBe(200)
    // 403 while banned (DECISIONS.md), and the sessions are gone: after an unban the tokens stay dead.
    expectError(await me(account.token), 403)
    expectError(await me(other), 403)
    expect(await t.server.deps.db.select().from(sessions).where(eq(sessions.userId, account.user.id))).toEqual([])
    const unban = await t.json(`/api/admin/users/${account.user.id}`, {
      method: 'PATCH',
      ...jsonBody({ banned: false }, admin.bearer),
    })
    expect(unban.status).toBe(200)
    expectError(await me(account.token), 401)
  })

  test('a deleted account’s tokens fail', async () => {
    const account = await registerUser(t)
    expect((await me(account.token)).status).toBe(200)
    await t.server.deps.db.delete(users).where(eq(users.id, account.user.id))
    expectError(await me(account.token), 401)
  })
})
