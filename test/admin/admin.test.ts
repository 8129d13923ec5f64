import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { count, sql } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { users } from '../../src/db/schema'
import { Forbidden } from '../../src/errors'
import { httpErrorOf } from '../../src/http/errors'
import { startServer } from '../../src/server'
import { makeImage, uploadForm } from '../fixtures'
import {
  databaseEnv,
  dropDatabase,
  jsonBody,
  makeAdmin,
  registerUser,
  startTestServer,
  type TestServer,
  userWithKey,
} from '../helpers'
import { noModel } from '../moderation/fake-classifier'

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const NO_OVERRIDES = { storageLimit: null, uploadsPerHour: null }
/** The limits of an unverified account by default (INTERFACE.md: 500 MB, 100 uploads an hour). */
const UNVERIFIED_DEFAULTS = { storageLimit: 500 * 1024 * 1024, uploadsPerHour: 100 }
const BOOT_ADMIN = { username: 'rootadmin', email: 'Root@Example.com', password: 'bootstrap password 1' }

let t: TestServer
let admin: Awaited<ReturnType<typeof registerUser>>
let seq = 0
const uniq = (base: string) => `${base}${Date.now().toString(36)}${seq++}`

beforeAll(async () => {
  t = await startTestServer({
    ADMIN_USERNAME: BOOT_ADMIN.username,
    ADMIN_EMAIL: BOOT_ADMIN.email,
    ADMIN_PASSWORD: BOOT_ADMIN.password,
  })
  admin = await registerUser(t, uniq('Admin'))
  await makeAdmin(t, admin.user.id)
})
afterAll(() => t.stop())

const listUsers = (query = '', headers: Record<string, string> = admin.bearer) =>
  t.json(`/api/admin/users${query}`, { headers })
const patchUser = (id: number, body: unknown, headers: Record<string, string> = admin.bearer) =>
  t.json(`/api/admin/users/${id}`, { method: 'PATCH', ...jsonBody(body, headers) })
const login = (username: string, password: string) =>
  t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username, password }) })

function expectError(res: { status: number; body: any }, status: number) {
  expect(res.status).toBe(status)
  expect(typeof res.body.error).toBe('string')
  expect(res.body.success).not.toBe(true)
}

async function upload(keyHeader: Record<string, string>, seed: number) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 40, 30, seed) }]),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { id: string; size: number }
}

describe('admin access control', () => {
  test('no token: 401 on every admin endpoint', async () => {
    expectError(await t.json('/api/admin/users'), 401)
    expectError(await t.json('/api/admin/users/1', { method: 'PATCH', ...jsonBody({ banned: true }) }), 401)
    expectError(await t.json('/api/admin/images/AAAAAAAA', { method: 'DELETE' }), 401)
    expectError(await listUsers('', { authorization: 'Bearer not-a-jwt' }), 401)
  })

  test('a non-admin: 403 on every admin endpoint, and nothing changes', async () => {
    const user = await userWithKey(t, uniq('Plain'))
    const image = await upload(user.keyHeader, 1)
    expectError(await listUsers('', user.bearer), 403)
    expectError(await patchUser(user.user.id, { role: 'admin' }, user.bearer), 403)
    expectError(await t.json(`/api/admin/images/${image.id}`, { method: 'DELETE', headers: user.bearer }), 403)
    expect((await t.json('/api/auth/me', { headers: user.bearer })).body.user.role).toBe('user')
    expect((await t.json(`/api/v1/image/${image.id}`)).status).toBe(200)
  })
})

describe('GET /api/admin/users', () => {
  test('lists users with banned, totalImages and storageUsed, and the page fields', async () => {
    const uploader = await userWithKey(t, uniq('Uploader'))
    const a = await upload(uploader.keyHeader, 2)
    const b = await upload(uploader.keyHeader, 3)
    const res = await listUsers('?limit=100')
    expect(res.status).toBe(200)
    expect(Object.keys(res.body).sort()).toEqual(['limit', 'page', 'pages', 'success', 'total', 'users'])
    expect(res.body).toMatchObject({ success: true, page: 1, limit: 100 })
    expect(res.body.total).toBe(res.body.users.length)
    expect(res.body.pages).toBe(1)
    for (const user of res.body.users) {
      expect(Object.keys(user).sort()).toEqual(
        [
          'banned',
          'createdAt',
          'email',
          'emailVerified',
          'id',
          'privateAccount',
          'role',
          'storageUsed',
          'totalImages',
          'username',
          'storageLimit',
          'uploadsPerHour',
          'effective',
        ].sort(),
      )
      expect(user.createdAt).toMatch(ISO_MS)
      expect(typeof user.banned).toBe('boolean')
      expect(user).not.toHaveProperty('passwordHash')
    }
    const row = res.body.users.find((u: any) => u.id === uploader.user.id)
    expect(row).toEqual({
      ...uploader.user,
      banned: false,
      totalImages: 2,
      storageUsed: a.size + b.size,
      ...NO_OVERRIDES,
      effective: UNVERIFIED_DEFAULTS,
    })
    const adminRow = res.body.users.find((u: any) => u.id === admin.user.id)
    expect(adminRow).toMatchObject({
      role: 'admin',
      totalImages: 0,
      storageUsed: 0,
      banned: false,
      ...NO_OVERRIDES,
      effective: { storageLimit: null, uploadsPerHour: null },
    })
  })

  test('q filters by username or email, case-insensitively; LIKE wildcards are literal', async () => {
    const name = uniq('Needle')
    const target = await registerUser(t, name)
    let res = await listUsers(`?q=${encodeURIComponent(name.toUpperCase())}`)
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(1)
    expect(res.body.users.map((u: any) => u.id)).toEqual([target.user.id])

    res = await listUsers(`?q=${encodeURIComponent(`${name.toLowerCase()}@example`)}`)
    expect(res.body.users.map((u: any) => u.id)).toEqual([target.user.id])

    res = await listUsers(`?q=${encodeURIComponent('no-such-user-anywhere')}`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ users: [], total: 0, pages: 0 })

    for (const wildcard of ['%', '_', '\\']) {
      res = await listUsers(`?q=${encodeURIComponent(wildcard)}`)
      expect(res.status).toBe(200)
      // Every registered name has `_`-free letters; `_` and `%` must not act as wildcards.
      for (const u of res.body.users) expect(`${u.username} ${u.email}`.toLowerCase()).toContain(wildcard)
      expect(res.body.total).toBe(res.body.users.length)
    }
  })

  test('pagination: limit and page walk the list without overlap; pages = ceil(total / limit)', async () => {
    await registerUser(t, uniq('PageA'))
    await registerUser(t, uniq('PageB'))
    const all = await listUsers('?limit=100')
    const total = all.body.total as number
    expect(total).toBeGreaterThanOrEqual(3)
    const first = await listUsers('?page=1&limit=2')
    const second = await listUsers('?page=2&limit=2')
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ page: 1, limit: 2, total, pages: Math.ceil(total / 2) })
    expect(first.body.users.length).toBe(2)
    expect(second.body.page).toBe(2)
    const ids1 = first.body.users.map((u: any) => u.id)
    const ids2 = second.body.users.map((u: any) => u.id)
    for (const id of ids2) expect(ids1).not.toContain(id)
    expect([...ids1, ...ids2]).toEqual(all.body.users.slice(0, ids1.length + ids2.length).map((u: any) => u.id))
    const beyond = await listUsers(`?page=${total + 5}&limit=2`)
    expect(beyond.status).toBe(200)
    expect(beyond.body.users).toEqual([])
  })

  test('page or limit that is not a positive integer: 400 { error }', async () => {
    for (const query of [
      '?page=0',
      '?page=-1',
      '?page=abc',
      '?limit=0',
      '?limit=-1',
      '?limit=abc',
      '?page=1.5',
      '?limit=2e1',
    ]) {
      const res = await listUsers(query)
      expect({ query, status: res.status }).toEqual({ query, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
  })
})

describe('PATCH /api/admin/users/:id', () => {
  test('role: promotes and demotes; the promoted account gets admin access', async () => {
    const user = await registerUser(t, uniq('Promote'))
    let res = await patchUser(user.user.id, { role: 'admin' })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      user: {
        ...user.user,
        role: 'admin',
        banned: false,
        totalImages: 0,
        storageUsed: 0,
        ...NO_OVERRIDES,
        effective: { storageLimit: null, uploadsPerHour: null },
      },
    })
    expect((await listUsers('', user.bearer)).status).toBe(200)
    res = await patchUser(user.user.id, { role: 'user' })
    expect(res.body.user.role).toBe('user')
    expectError(await listUsers('', user.bearer), 403)
  })

  test('emailVerified: set and cleared', async () => {
    const user = await registerUser(t, uniq('Verify'))
    let res = await patchUser(user.user.id, { emailVerified: true })
    expect(res.status).toBe(200)
    expect(res.body.user.emailVerified).toBe(true)
    expect((await t.json('/api/auth/me', { headers: user.bearer })).body.user.emailVerified).toBe(true)
    res = await patchUser(user.user.id, { emailVerified: false })
    expect((await t.json('/api/auth/me', { headers: user.bearer })).body.user.emailVerified).toBe(false)
  })

  test('invalid values: 400 and nothing changes; unknown user: 404', async () => {
    const user = await registerUser(t, uniq('Invalid'))
    for (const body of [
      { role: 'superuser' },
      { role: 'ADMIN' },
      { banned: 'yes' },
      { emailVerified: 1 },
      { banned: null },
    ]) {
      const res = await patchUser(user.user.id, body)
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
    expect((await t.json('/api/auth/me', { headers: user.bearer })).body.user).toEqual(user.user)
    expectError(await patchUser(99999999, { banned: true }), 404)
    expectError(await patchUser(0, { banned: true }), 400)
  })

  test('banned: login 403, existing JWT 401 (the ban ended its session), API keys 403; unbanning restores access but not the ended sessions', async () => {
    const user = await userWithKey(t, uniq('Banned'))
    expect((await t.json('/api/v1/me', { headers: user.keyHeader })).status).toBe(200)

    const res = await patchUser(user.user.id, { banned: true })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    const listed = await listUsers(`?q=${user.user.username}`)
    expect(listed.body.users[0]).toMatchObject({ id: user.user.id, banned: true })

    expectError(await login(user.user.username, user.password), 403)
    expectError(await login(user.user.email, user.password), 403)
    // A wrong password still gives 401: a ban does not reveal the account to someone without its password.
    expectError(await login(user.user.username, 'wrong password!'), 401)
    expectError(await t.json('/api/auth/me', { headers: user.bearer }), 403)
    expectError(await t.json('/api/keys', { headers: user.bearer }), 403)
    expectError(await t.json('/api/keys', { method: 'POST', ...jsonBody({ name: 'more' }, user.bearer) }), 403)
    expectError(await t.json('/api/v1/me', { headers: user.keyHeader }), 403)
    const blocked = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 20, 20, 9) }]),
    })
    expectError(blocked, 403)
    let caught: unknown
    try {
      await t.server.services.auth.keyUser(user.apiKey)
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(Forbidden)
    expect(httpErrorOf(caught as Forbidden)?.status).toBe(403)

    expect((await patchUser(user.user.id, { banned: false })).status).toBe(200)
    const again = await login(user.user.username, user.password)
    expect(again.status).toBe(200)
    expect((await t.json('/api/auth/me', { headers: { authorization: `Bearer ${again.body.token}` } })).status).toBe(
      200,
    )
    expectError(await t.json('/api/auth/me', { headers: user.bearer }), 401)
    expect((await t.json('/api/v1/me', { headers: user.keyHeader })).status).toBe(200)
  })

  test('a banned admin loses admin access too', async () => {
    const other = await registerUser(t, uniq('BadAdmin'))
    await makeAdmin(t, other.user.id)
    expect((await listUsers('', other.bearer)).status).toBe(200)
    const second = await login(other.user.username, other.password)
    expect((await patchUser(other.user.id, { banned: true })).status).toBe(200)
    // Banned: 403 with any of its tokens (the ban also ended their sessions: 401 after an unban, below).
    expectError(await listUsers('', other.bearer), 403)
    expectError(await patchUser(admin.user.id, { banned: true }, other.bearer), 403)
    expectError(await listUsers('', { authorization: `Bearer ${second.body.token}` }), 403)
    expect((await patchUser(other.user.id, { banned: false })).status).toBe(200)
    expectError(await listUsers('', { authorization: `Bearer ${second.body.token}` }), 401)
    expect((await t.json('/api/auth/me', { headers: admin.bearer })).status).toBe(200)
  })
})

describe('DELETE /api/admin/images/:id', () => {
  test("removes anyone's image, its files included; unknown: 404", async () => {
    const owner = await userWithKey(t, uniq('Owner'))
    const image = await upload(owner.keyHeader, 5)
    const details = (await t.json(`/api/v1/image/${image.id}`)).body.data
    expect((await fetch(details.url)).status).toBe(200)
    expect((await listUsers(`?q=${owner.user.username}`)).body.users[0]).toMatchObject({
      totalImages: 1,
      storageUsed: image.size,
    })

    const res = await t.json(`/api/admin/images/${image.id}`, { method: 'DELETE', headers: admin.bearer })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect((await t.json(`/api/v1/image/${image.id}`)).status).toBe(404)
    expect((await fetch(details.url)).status).toBe(404)
    expect((await fetch(details.thumbnail)).status).toBe(404)
    const row = (await listUsers(`?q=${owner.user.username}`)).body.users[0]
    expect(row).toMatchObject({ totalImages: 0, storageUsed: 0 })

    expectError(await t.json(`/api/admin/images/${image.id}`, { method: 'DELETE', headers: admin.bearer }), 404)
  })
})

describe('first admin from the environment', () => {
  test('ADMIN_USERNAME/EMAIL/PASSWORD create a verified admin at startup', async () => {
    const res = await login(BOOT_ADMIN.username, BOOT_ADMIN.password)
    expect(res.status).toBe(200)
    expect(res.body.user).toMatchObject({
      username: BOOT_ADMIN.username,
      role: 'admin',
      emailVerified: true,
      privateAccount: false,
    })
    expect(res.body.user.email.toLowerCase()).toBe(BOOT_ADMIN.email.toLowerCase())
    const list = await listUsers('', { authorization: `Bearer ${res.body.token}` })
    expect(list.status).toBe(200)
    expect(list.body.users.filter((u: any) => u.username === BOOT_ADMIN.username).length).toBe(1)
  })

  test('created once: a restart with other values leaves the existing account alone', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-admin-'))
    // PostgreSQL runs: one database of its own, kept across the restart.
    const database = await databaseEnv()
    const env = (password: string) =>
      loadConfig({
        ...database,
        DATA_DIR: dataDir,
        PORT: '0',
        LOG_REQUESTS: 'false',
        JWT_SECRET: 'k'.repeat(48),
        ADMIN_USERNAME: 'boss',
        ADMIN_EMAIL: 'boss@example.com',
        ADMIN_PASSWORD: password,
      })
    let server = await startServer(env('first password 1'), noModel())
    try {
      await server.stop()
      server = await startServer(env('second password 2'), noModel())
      const post = (password: string) =>
        fetch(`http://localhost:${server.port}/api/auth/login`, {
          method: 'POST',
          ...jsonBody({ username: 'boss', password }),
        })
      expect((await post('first password 1')).status).toBe(200)
      expect((await post('second password 2')).status).toBe(401)
      const [row] = await server.db.select({ n: count() }).from(users).where(sql`lower(${users.username}) = 'boss'`)
      expect(row.n).toBe(1)
    } finally {
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
      await dropDatabase(database)
    }
  })

  test('without the variables no admin is created', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-noadmin-'))
    const database = await databaseEnv()
    const server = await startServer(
      loadConfig({
        ...database,
        DATA_DIR: dataDir,
        PORT: '0',
        LOG_REQUESTS: 'false',
        JWT_SECRET: 'k'.repeat(48),
        ADMIN_USERNAME: 'boss',
      }),
      noModel(),
    )
    try {
      const [row] = await server.db.select({ n: count() }).from(users)
      expect(row.n).toBe(0)
    } finally {
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
      await dropDatabase(database)
    }
  })
})
