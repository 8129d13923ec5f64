import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeImage, uploadForm } from '../fixtures'
import { jsonBody, makeAdmin, registerUser, type TestServer, userWithKey } from '../helpers'
import { expectError, send, startServer, uploadImage } from './support'

let t: TestServer
let admin: Awaited<ReturnType<typeof registerUser>>
let victim: Awaited<ReturnType<typeof userWithKey>>
let image: Awaited<ReturnType<typeof uploadImage>>

beforeAll(async () => {
  t = await startServer()
  admin = await registerUser(t)
  await makeAdmin(t, admin.user.id)
  victim = await userWithKey(t)
  image = await uploadImage(
    t,
    victim.keyHeader,
    {},
    { bytes: await makeImage('png', 40, 30, 7), name: 'zebracrossing.png' },
  )
})
afterAll(() => t.stop())

const setBanned = async (banned: boolean) => {
  const res = await t.json(`/api/admin/users/${victim.user.id}`, send('PATCH', { banned }, admin.bearer))
  expect(res.status).toBe(200)
}
const galleryIds = async () => (await t.json('/api/gallery?limit=40')).body.images.map((i: { id: string }) => i.id)
const searchIds = async () =>
  (await t.json('/api/search?q=zebracross')).body.images?.map((i: { id: string }) => i.id) ?? []

describe('bans', () => {
  test('before: the account works and its public image is in the gallery, search and profile', async () => {
    expect((await t.json('/api/v1/me', { headers: victim.keyHeader })).status).toBe(200)
    expect(await galleryIds()).toContain(image.id)
    expect(await searchIds()).toContain(image.id)
    const profile = await t.json(`/api/users/${victim.user.username}`)
    expect(profile.status).toBe(200)
    expect(profile.body.images.map((i: { id: string }) => i.id)).toContain(image.id)
  })

  test('a ban takes effect at once: keys and tokens get 403 on every authenticated route, login too', async () => {
    // Warm every path first, so a cache (if there were one) would hold the "not banned" answer.
    expect((await t.json('/api/auth/me', { headers: victim.bearer })).status).toBe(200)
    expect((await t.json('/api/v1/images', { headers: victim.keyHeader })).status).toBe(200)
    await setBanned(true)

    const checks: [string, RequestInit][] = [
      ['/api/v1/me', { headers: victim.keyHeader }],
      ['/api/v1/images', { headers: victim.keyHeader }],
      [`/api/v1/image/${image.id}`, send('PATCH', { nsfw: true }, victim.keyHeader)],
      [`/api/v1/image/${image.id}`, { method: 'DELETE', headers: victim.keyHeader }],
      [
        '/api/v1/upload',
        { method: 'POST', headers: victim.keyHeader, body: uploadForm([{ bytes: await makeImage('png', 8, 8, 1) }]) },
      ],
      ['/api/auth/me', { headers: victim.bearer }],
      ['/api/keys', { headers: victim.bearer }],
      ['/api/keys', send('POST', { name: 'another' }, victim.bearer)],
      ['/api/albums', { headers: victim.bearer }],
      ['/api/albums', send('POST', { title: 'x' }, victim.bearer)],
      ['/api/embeds', { headers: victim.bearer }],
      ['/api/account', send('PATCH', { privateAccount: true }, victim.bearer)],
      // A bearer token on the optional-session upload is never silently treated as anonymous.
      [
        '/api/upload',
        { method: 'POST', headers: victim.bearer, body: uploadForm([{ bytes: await makeImage('png', 8, 8, 2) }]) },
      ],
    ]
    for (const [path, init] of checks) {
      const res = await t.json(path, init)
      expect(`${init.method ?? 'GET'} ${path} ${res.status}`).toBe(`${init.method ?? 'GET'} ${path} 403`)
      expect(typeof res.body.error).toBe('string')
    }
    const login = await t.json(
      '/api/auth/login',
      send('POST', { username: victim.user.username, password: victim.password }),
    )
    expectError(login, 403)
    expect(login.body.token).toBeUndefined()
    // Nothing the banned account tried went through.
    expect((await t.json(`/api/v1/image/${image.id}`)).body.data.nsfw).toBe(false)
  })

  test("while banned, the account's public images leave the gallery, search and profile", async () => {
    expect(await galleryIds()).not.toContain(image.id)
    expect(await searchIds()).not.toContain(image.id)
    expectError(await t.json(`/api/users/${victim.user.username}`), 404)
    // The viewer page does not name a banned uploader.
    const page = await (await t.fetch(`/i/${image.id}`)).text()
    expect(page).not.toContain(`/u/${victim.user.username}`)
  })

  test('unbanning restores the keys and login at once; the sessions the ban ended stay ended', async () => {
    await setBanned(false)
    expect((await t.json('/api/v1/me', { headers: victim.keyHeader })).status).toBe(200)
    expectError(await t.json('/api/auth/me', { headers: victim.bearer }), 401)
    const login = await t.json('/api/auth/login', {
      method: 'POST',
      ...jsonBody({ username: victim.user.username, password: victim.password }),
    })
    expect(login.status).toBe(200)
    expect((await t.json('/api/auth/me', { headers: { authorization: `Bearer ${login.body.token}` } })).status).toBe(
      200,
    )
    expect(await galleryIds()).toContain(image.id)
    expect(await searchIds()).toContain(image.id)
    expect((await t.json(`/api/users/${victim.user.username}`)).status).toBe(200)
  })

  test('a banned admin loses admin powers at once', async () => {
    const other = await registerUser(t)
    await makeAdmin(t, other.user.id)
    expect((await t.json('/api/admin/users', { headers: other.bearer })).status).toBe(200)
    expect(
      (await t.json(`/api/admin/users/${other.user.id}`, send('PATCH', { banned: true }, admin.bearer))).status,
    ).toBe(200)
    expectError(await t.json('/api/admin/users', { headers: other.bearer }), 403)
    expectError(await t.json(`/api/admin/users/${admin.user.id}`, send('PATCH', { banned: true }, other.bearer)), 403)
    expectError(
      await t.json('/api/auth/login', send('POST', { username: other.user.username, password: other.password })),
      403,
    )
  })
})
