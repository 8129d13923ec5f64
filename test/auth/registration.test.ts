/**
 * Registration modes (issue 23): REGISTRATION=open (the default: anyone), invite (an admin's invite code, its uses
 * counted atomically) or closed (nobody; admins create accounts with the admin API or the CLI). The register and login
 * pages follow the mode.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config'
import { jsonBody, startTestServer, type TestServer, testClock } from '../helpers'

const TIMEOUT = 60_000
const ADMIN = { ADMIN_USERNAME: 'root', ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'root password!' }
let seq = 0
const uniq = () => `inv${Date.now().toString(36)}${seq++}`

function expectError(res: { status: number; body: any }, status: number) {
  expect(res.status).toBe(status)
  expect(typeof res.body.error).toBe('string')
  expect(res.body.token).toBeUndefined()
}

const registerWith = (t: TestServer, extra: Record<string, unknown> = {}, name = uniq()) =>
  t.json('/api/auth/register', {
    method: 'POST',
    ...jsonBody({ username: name, email: `${name}@example.com`, password: 'correct horse battery', ...extra }),
  })

async function adminBearer(t: TestServer) {
  const res = await t.json('/api/auth/login', {
    method: 'POST',
    ...jsonBody({ username: ADMIN.ADMIN_USERNAME, password: ADMIN.ADMIN_PASSWORD }),
  })
  expect(res.status).toBe(200)
  return { authorization: `Bearer ${res.body.token}` }
}

const page = async (t: TestServer, path: string) => {
  const res = await t.fetch(path)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
  return res.text()
}

describe('REGISTRATION=invite', () => {
  let t: TestServer
  let admin: Record<string, string>
  const clock = testClock()
  beforeAll(async () => {
    t = await startTestServer({ ...ADMIN, REGISTRATION: 'invite' }, { now: clock.now })
    admin = await adminBearer(t)
  }, TIMEOUT)
  afterAll(() => t?.stop(), TIMEOUT)

  const createInvite = (body: Record<string, unknown> = {}, headers = admin) =>
    t.json('/api/admin/invites', { method: 'POST', ...jsonBody(body, headers) })

  test('without a code, or with an unknown one: 403', async () => {
    expectError(await registerWith(t), 403)
    expectError(await registerWith(t, { invite: '' }), 403)
    expectError(await registerWith(t, { invite: 'no-such-code' }), 403)
  })

  test('an invite admits as many registrations as it has uses, then 403; the list counts them', async () => {
    const res = await createInvite({ uses: 2 })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ success: true, uses: 2, used: 0, expiresAt: null })
    const { code, id } = res.body
    expect(code).toMatch(/^[A-Za-z0-9]{24}$/)
    expect(res.body.url).toBe(`${t.url}/register?invite=${code}`)
    const first = await registerWith(t, { invite: code })
    expect(first.status).toBe(201)
    expect(typeof first.body.token).toBe('string')
    expect((await t.json('/api/auth/me', { headers: { authorization: `Bearer ${first.body.token}` } })).status).toBe(
      200,
    )
    expect((await registerWith(t, { invite: code })).status).toBe(201)
    expectError(await registerWith(t, { invite: code }), 403)
    const listed = (await t.json('/api/admin/invites', { headers: admin })).body.invites
    expect(listed.find((i: any) => i.id === id)).toMatchObject({ code, uses: 2, used: 2 })
  })

  test('a registration refused for another reason does not spend the invite', async () => {
    const { code } = (await createInvite()).body
    expectError(await registerWith(t, { invite: code }, ADMIN.ADMIN_USERNAME), 409)
    expectError(await registerWith(t, { invite: code, password: 'short' }), 400)
    expect((await registerWith(t, { invite: code })).status).toBe(201)
  })

  test('two parallel registrations with a one-use invite: exactly one gets in', async () => {
    const { code } = (await createInvite({ uses: 1 })).body
    const answers = await Promise.all([registerWith(t, { invite: code }), registerWith(t, { invite: code })])
    expect(answers.map((a) => a.status).sort()).toEqual([201, 403])
    const listed = (await t.json('/api/admin/invites', { headers: admin })).body.invites
    expect(listed.find((i: any) => i.code === code).used).toBe(1)
  })

  test('expired: usable until its expiry, 403 from then on', async () => {
    const start = Date.now()
    clock.set(start)
    try {
      const res = await createInvite({ expiresIn: 60, uses: 5 })
      expect(res.body.expiresAt).toBe(new Date(start + 60_000).toISOString())
      clock.set(start + 59_999)
      expect((await registerWith(t, { invite: res.body.code })).status).toBe(201)
      clock.set(start + 60_000)
      expectError(await registerWith(t, { invite: res.body.code }), 403)
    } finally {
      clock.reset()
    }
  })

  test('revoked, by code or by id: 403; revoking again: 404', async () => {
    const byCode = (await createInvite()).body
    const byId = (await createInvite()).body
    expect((await t.json(`/api/admin/invites/${byCode.code}`, { method: 'DELETE', headers: admin })).status).toBe(200)
    expect((await t.json(`/api/admin/invites/${byId.id}`, { method: 'DELETE', headers: admin })).status).toBe(200)
    expectError(await registerWith(t, { invite: byCode.code }), 403)
    expectError(await registerWith(t, { invite: byId.code }), 403)
    expectError(await t.json(`/api/admin/invites/${byCode.code}`, { method: 'DELETE', headers: admin }), 404)
    const codes = (await t.json('/api/admin/invites', { headers: admin })).body.invites.map((i: any) => i.code)
    expect(codes).not.toContain(byCode.code)
    expect(codes).not.toContain(byId.code)
  })

  test('invites are for admins; bad bodies are 400', async () => {
    const { code } = (await createInvite()).body
    const user = await registerWith(t, { invite: code })
    const bearer = { authorization: `Bearer ${user.body.token}` }
    expectError(await createInvite({}, bearer), 403)
    expectError(await t.json('/api/admin/invites', { headers: bearer }), 403)
    expectError(await t.json('/api/admin/invites', { method: 'POST', ...jsonBody({}) }), 401)
    for (const body of [{ uses: 0 }, { uses: 1001 }, { uses: 1.5 }, { expiresIn: 10 }, { expiresIn: 'soon' }])
      expectError(await createInvite(body), 400)
  })

  test('the register page asks for the code', async () => {
    const html = await page(t, '/register')
    expect(html).toContain('id="register-invite"')
    expect(html).toContain('name="invite"')
  })
})

describe('REGISTRATION=closed', () => {
  let t: TestServer
  let admin: Record<string, string>
  beforeAll(async () => {
    t = await startTestServer({ ...ADMIN, REGISTRATION: 'closed' })
    admin = await adminBearer(t)
  }, TIMEOUT)
  afterAll(() => t?.stop(), TIMEOUT)

  test('every registration is refused, invite or not', async () => {
    expectError(await registerWith(t), 403)
    const { code } = (await t.json('/api/admin/invites', { method: 'POST', ...jsonBody({}, admin) })).body
    expectError(await registerWith(t, { invite: code }), 403)
  })

  test('admins create accounts with the admin API (email verified); they log in', async () => {
    const name = uniq()
    const body = { username: name, email: `${name}@example.com`, password: 'made by admin' }
    const res = await t.json('/api/admin/users', { method: 'POST', ...jsonBody(body, admin) })
    expect(res.status).toBe(201)
    expect(res.body.user).toMatchObject({ username: name, role: 'user', emailVerified: true })
    expectError(await t.json('/api/admin/users', { method: 'POST', ...jsonBody(body, admin) }), 409)
    expectError(
      await t.json('/api/admin/users', { method: 'POST', ...jsonBody({ ...body, username: 'x' }, admin) }),
      400,
    )
    const login = await t.json('/api/auth/login', {
      method: 'POST',
      ...jsonBody({ username: name, password: body.password }),
    })
    expect(login.status).toBe(200)
    const bearer = { authorization: `Bearer ${login.body.token}` }
    expectError(
      await t.json('/api/admin/users', { method: 'POST', ...jsonBody({ ...body, username: uniq() }, bearer) }),
      403,
    )
  })

  test('the register page says registration is closed; the login page does not offer it', async () => {
    const register = await page(t, '/register')
    expect(register).toContain('Registration is closed')
    expect(register).not.toContain('<form')
    expect(await page(t, '/login')).not.toContain('href="/register"')
  })
})

describe('REGISTRATION=open (the default)', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer()
  }, TIMEOUT)
  afterAll(() => t?.stop(), TIMEOUT)

  test('anyone registers; an invite field is ignored; the pages offer registration without a code', async () => {
    expect((await registerWith(t)).status).toBe(201)
    expect((await registerWith(t, { invite: 'anything' })).status).toBe(201)
    expect(await page(t, '/register')).not.toContain('name="invite"')
    expect(await page(t, '/login')).toContain('href="/register"')
  })

  test('REGISTRATION takes only open, invite or closed', () => {
    expect(loadConfig({ REGISTRATION: 'invite' }).auth.registration).toBe('invite')
    expect(loadConfig({}).auth.registration).toBe('open')
    expect(() => loadConfig({ REGISTRATION: 'invites' })).toThrow(ConfigError)
  })
})
