import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { registerUser, type TestServer, userWithKey } from '../helpers'
import { expectError, send, startServer, uploadImage } from '../pages/support'

// The JWT routes the dashboard uses: GET /api/images, PATCH and DELETE /api/images/:id, GET /api/account/usage.
let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let other: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer()
  owner = await userWithKey(t)
  other = await userWithKey(t)
})
afterAll(() => t.stop())

describe('GET /api/images (JWT)', () => {
  test("lists the caller's images with the shape of GET /api/v1/images", async () => {
    const a = await uploadImage(t, owner.keyHeader)
    const b = await uploadImage(t, owner.keyHeader, { visibility: 'private', nsfw: 'true' })
    await uploadImage(t, other.keyHeader)
    const viaJwt = await t.json('/api/images?limit=50', { headers: owner.bearer })
    const viaKey = await t.json('/api/v1/images?limit=50', { headers: owner.keyHeader })
    expect(viaJwt.status).toBe(200)
    expect(viaJwt.body).toEqual(viaKey.body)
    expect(viaJwt.body.images.map((i: { id: string }) => i.id)).toEqual([b.id, a.id])
    expect(viaJwt.body).toMatchObject({ success: true, total: 2, page: 1, limit: 50, pages: 1 })
  })

  test('filters by visibility and nsfw', async () => {
    const user = await userWithKey(t)
    const pub = await uploadImage(t, user.keyHeader)
    const priv = await uploadImage(t, user.keyHeader, { visibility: 'private' })
    const nsfw = await uploadImage(t, user.keyHeader, { nsfw: 'true' })
    const ids = async (q: string) =>
      (await t.json(`/api/images${q}`, { headers: user.bearer })).body.images.map((i: { id: string }) => i.id)
    expect(await ids('?visibility=private')).toEqual([priv.id])
    expect(await ids('?visibility=public')).toEqual([nsfw.id, pub.id])
    expect(await ids('?nsfw=true')).toEqual([nsfw.id])
    expect(await ids('?nsfw=false')).toEqual([priv.id, pub.id])
    expect(await ids('?visibility=public&nsfw=false')).toEqual([pub.id])
    const res = await t.json('/api/images?visibility=public&nsfw=false', { headers: user.bearer })
    expect(res.body).toMatchObject({ total: 1, pages: 1 })
  })

  test('bad filters and pages are 400; no JWT, a bad JWT or an API key instead: 401', async () => {
    expectError(await t.json('/api/images?visibility=hidden', { headers: owner.bearer }), 400)
    expectError(await t.json('/api/images?nsfw=maybe', { headers: owner.bearer }), 400)
    expectError(await t.json('/api/images?page=0', { headers: owner.bearer }), 400)
    expectError(await t.json('/api/images'), 401)
    expectError(await t.json('/api/images', { headers: { authorization: 'Bearer nope' } }), 401)
    expectError(await t.json('/api/images', { headers: owner.keyHeader }), 401)
  })
})

describe('PATCH /api/images/:id (JWT)', () => {
  test("changes visibility and nsfw of the caller's image, like PATCH /api/v1/image/:id", async () => {
    const image = await uploadImage(t, owner.keyHeader)
    const res = await t.json(`/api/images/${image.id}`, send('PATCH', { visibility: 'private' }, owner.bearer))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ success: true, id: image.id, visibility: 'private', nsfw: false })
    const both = await t.json(
      `/api/images/${image.id}`,
      send('PATCH', { visibility: 'public', nsfw: true }, owner.bearer),
    )
    expect(both.body).toMatchObject({ success: true, id: image.id, visibility: 'public', nsfw: true })
    // The same answer as the key-based route.
    const viaKey = await t.json(
      `/api/v1/image/${image.id}`,
      send('PATCH', { visibility: 'public', nsfw: true }, owner.keyHeader),
    )
    expect(both.body).toEqual(viaKey.body)
    expect((await t.json(`/api/v1/image/${image.id}`)).body.data).toMatchObject({ visibility: 'public', nsfw: true })
  })

  test("400 for no fields or a bad visibility; 404 for someone else's or unknown image; 401 without a JWT", async () => {
    const image = await uploadImage(t, owner.keyHeader)
    expectError(await t.json(`/api/images/${image.id}`, send('PATCH', {}, owner.bearer)), 400)
    expectError(await t.json(`/api/images/${image.id}`, send('PATCH', { visibility: 'hidden' }, owner.bearer)), 400)
    expectError(await t.json(`/api/images/${image.id}`, send('PATCH', { nsfw: 'yes' }, owner.bearer)), 400)
    expectError(await t.json(`/api/images/${image.id}`, send('PATCH', { visibility: 'private' }, other.bearer)), 404)
    expectError(await t.json('/api/images/ZZZZZZZZ', send('PATCH', { visibility: 'private' }, owner.bearer)), 404)
    expectError(await t.json(`/api/images/${image.id}`, send('PATCH', { visibility: 'private' }, {})), 401)
    expectError(await t.json(`/api/images/${image.id}`, send('PATCH', { visibility: 'private' }, owner.keyHeader)), 401)
    expect((await t.json(`/api/v1/image/${image.id}`)).body.data.visibility).toBe('public')
  })

  test('does not shadow the embed routes under /api/images', async () => {
    const image = await uploadImage(t, owner.keyHeader)
    const profile = (await t.json('/api/embeds', send('POST', { name: 'p' }, owner.bearer))).body.profile
    const bulk = await t.json(
      '/api/images/bulk-embed',
      send('PATCH', { image_ids: [image.id], embed_profile_id: profile.id }, owner.bearer),
    )
    expect(bulk.body).toEqual({ success: true, updated: 1 })
    const one = await t.json(`/api/images/${image.id}/embed`, send('PATCH', { embed_profile_id: null }, owner.bearer))
    expect(one.body).toEqual({ success: true, id: image.id, embed_profile_id: null })
  })
})

describe('DELETE /api/images/:id (JWT)', () => {
  test("deletes the caller's image; someone else's is 404 and stays; 401 without a JWT", async () => {
    const image = await uploadImage(t, owner.keyHeader)
    expectError(await t.json(`/api/images/${image.id}`, { method: 'DELETE' }), 401)
    expectError(await t.json(`/api/images/${image.id}`, { method: 'DELETE', headers: owner.keyHeader }), 401)
    expectError(await t.json(`/api/images/${image.id}`, { method: 'DELETE', headers: other.bearer }), 404)
    expect((await t.fetch(`/cdn/${image.id}.png`)).status).toBe(200)
    const res = await t.json(`/api/images/${image.id}`, { method: 'DELETE', headers: owner.bearer })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expect((await t.fetch(`/cdn/${image.id}.png`)).status).toBe(404)
    expectError(await t.json(`/api/images/${image.id}`, { method: 'DELETE', headers: owner.bearer }), 404)
    expectError(await t.json('/api/images/bad', { method: 'DELETE', headers: owner.bearer }), 404)
  })
})

describe('GET /api/account/usage (JWT)', () => {
  test('answers the object of GET /api/v1/me', async () => {
    const user = await userWithKey(t)
    await uploadImage(t, user.keyHeader)
    const viaJwt = await t.json('/api/account/usage', { headers: user.bearer })
    const viaKey = await t.json('/api/v1/me', { headers: user.keyHeader })
    expect(viaJwt.status).toBe(200)
    expect(viaJwt.body).toEqual(viaKey.body)
    expect(viaJwt.body).toMatchObject({
      success: true,
      username: user.user.username,
      totalImages: 1,
      rateLimit: { window: '1 hour', used: 1 },
    })
  })

  test('401 without a JWT, with a bad one, or with an API key', async () => {
    const user = await registerUser(t)
    expect((await t.json('/api/account/usage', { headers: user.bearer })).status).toBe(200)
    expectError(await t.json('/api/account/usage'), 401)
    expectError(await t.json('/api/account/usage', { headers: { authorization: 'Bearer x.y.z' } }), 401)
    expectError(await t.json('/api/account/usage', { headers: owner.keyHeader }), 401)
  })
})
