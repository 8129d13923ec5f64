import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { albums } from '../../src/db/schema'
import { jsonBody, registerUser, type TestServer, userWithKey } from '../helpers'
import { expectError, send, startServer, uploadImage } from '../pages/support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let other: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer()
  owner = await userWithKey(t)
  other = await userWithKey(t)
})
afterAll(() => t.stop())

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

async function createAlbum(body: Record<string, unknown>, headers = owner.bearer) {
  const res = await t.json('/api/albums', send('POST', body, headers))
  expect(res.status).toBe(201)
  return res.body.album
}

describe('POST /api/albums', () => {
  test('creates a private album by default with the full Album shape', async () => {
    const res = await t.json(
      '/api/albums',
      send('POST', { title: 'Holidays', description: 'Summer 2026' }, owner.bearer),
    )
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    const album = res.body.album
    expect(album).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9]{8}$/),
      title: 'Holidays',
      description: 'Summer 2026',
      isPublic: false,
      hasPassword: false,
      imageCount: 0,
      cover: null,
      url: `${t.url}/a/${album.id}`,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    })
  })

  test('isPublic and a missing description', async () => {
    const album = await createAlbum({ title: 'Open', isPublic: true })
    expect(album.isPublic).toBe(true)
    expect(album.description).toBe('')
  })

  test('title is required and 1-100 characters; description at most 1000; isPublic boolean', async () => {
    for (const body of [
      {},
      { title: '' },
      { title: '   ' },
      { title: 'x'.repeat(101) },
      { title: 5 },
      { title: 'ok', description: 'd'.repeat(1001) },
      { title: 'ok', isPublic: 'yes' },
    ]) {
      expectError(await t.json('/api/albums', send('POST', body, owner.bearer)), 400)
    }
    const max = await createAlbum({ title: 'x'.repeat(100), description: 'd'.repeat(1000) })
    expect(max.title.length).toBe(100)
  })

  test('requires a JWT (an API key is not enough)', async () => {
    expectError(await t.json('/api/albums', send('POST', { title: 'x' }, {})), 401)
    expectError(await t.json('/api/albums', send('POST', { title: 'x' }, owner.keyHeader)), 401)
    expectError(await t.json('/api/albums', send('POST', { title: 'x' }, { authorization: 'Bearer nope' })), 401)
  })

  test('malformed JSON is a 400 with an error body', async () => {
    const res = await t.json('/api/albums', {
      method: 'POST',
      headers: { ...owner.bearer, 'content-type': 'application/json' },
      body: '{"title":',
    })
    expectError(res, 400)
  })
})

describe('GET /api/albums', () => {
  test("lists only the caller's live albums, newest first", async () => {
    const user = await registerUser(t)
    const a = await createAlbum({ title: 'first' }, user.bearer)
    const b = await createAlbum({ title: 'second' }, user.bearer)
    const c = await createAlbum({ title: 'third' }, user.bearer)
    expect((await t.fetch(`/api/albums/${b.id}`, { method: 'DELETE', headers: user.bearer })).status).toBe(200)
    const res = await t.json('/api/albums', { headers: user.bearer })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.albums.map((x: any) => x.id)).toEqual([c.id, a.id])
    expectError(await t.json('/api/albums'), 401)
  })
})

describe('GET /api/albums/:id', () => {
  test('the owner sees a private album whole, private images included', async () => {
    const album = await createAlbum({ title: 'mine' })
    const pub = await uploadImage(t, owner.keyHeader)
    const priv = await uploadImage(t, owner.keyHeader, { visibility: 'private' })
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: pub.id }, owner.bearer))
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: priv.id }, owner.bearer))
    const res = await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.album.imageCount).toBe(2)
    expect(res.body.album.cover).toBe(priv.thumbnail)
    expect(res.body.images.map((i: any) => i.id)).toEqual([priv.id, pub.id])
    expect(res.body.images[1]).toEqual({
      id: pub.id,
      url: pub.url,
      thumbnail: pub.thumbnail,
      viewer: pub.viewer,
      filename: expect.any(String),
      width: 64,
      height: 48,
      size: pub.size,
      mime: 'image/png',
      views: expect.any(Number),
      visibility: 'public',
      nsfw: false,
      created_at: expect.stringMatching(ISO),
    })
  })

  test('others: a private album is 404, for anonymous callers and other accounts alike', async () => {
    const album = await createAlbum({ title: 'secret' })
    expectError(await t.json(`/api/albums/${album.id}`), 404)
    expectError(await t.json(`/api/albums/${album.id}`, { headers: other.bearer }), 404)
  })

  test('others: a public album is open to everyone, without its private images', async () => {
    const album = await createAlbum({ title: 'shared', isPublic: true })
    const pub = await uploadImage(t, owner.keyHeader)
    const priv = await uploadImage(t, owner.keyHeader, { private: 'true' })
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: pub.id }, owner.bearer))
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: priv.id }, owner.bearer))
    for (const headers of [{}, other.bearer]) {
      const res = await t.json(`/api/albums/${album.id}`, { headers })
      expect(res.status).toBe(200)
      expect(res.body.images.map((i: any) => i.id)).toEqual([pub.id])
      // Count and cover never reveal the private image either.
      expect(res.body.album.imageCount).toBe(1)
      expect(res.body.album.cover).toBe(pub.thumbnail)
    }
  })

  test('a password-protected public album needs X-Album-Password or ?password=, else 403', async () => {
    const album = await createAlbum({ title: 'locked', isPublic: true })
    const put = await t.json(`/api/albums/${album.id}`, send('PUT', { password: 'open sesame' }, owner.bearer))
    expect(put.status).toBe(200)
    expect(put.body.album.hasPassword).toBe(true)
    expect(JSON.stringify(put.body)).not.toContain('open sesame')

    expectError(await t.json(`/api/albums/${album.id}`), 403)
    expectError(await t.json(`/api/albums/${album.id}`, { headers: { 'x-album-password': 'wrong' } }), 403)
    expectError(await t.json(`/api/albums/${album.id}?password=wrong`), 403)
    expectError(await t.json(`/api/albums/${album.id}`, { headers: other.bearer }), 403)

    const byHeader = await t.json(`/api/albums/${album.id}`, { headers: { 'x-album-password': 'open sesame' } })
    expect(byHeader.status).toBe(200)
    expect(byHeader.body.album.id).toBe(album.id)
    const byQuery = await t.json(`/api/albums/${album.id}?password=${encodeURIComponent('open sesame')}`)
    expect(byQuery.status).toBe(200)
    // The owner never needs it.
    expect((await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })).status).toBe(200)
  })

  test('the password is stored hashed', async () => {
    const album = await createAlbum({ title: 'hashed', isPublic: true })
    await t.json(`/api/albums/${album.id}`, send('PUT', { password: 'plain-text-secret' }, owner.bearer))
    const [row] = await t.server.db
      .select({ passwordHash: albums.passwordHash })
      .from(albums)
      .where(eq(albums.id, album.id))
    expect(row.passwordHash).not.toContain('plain-text-secret')
    expect(row.passwordHash!.startsWith('$argon2id$')).toBe(true)
  })

  test('unknown and malformed ids are 404', async () => {
    expectError(await t.json('/api/albums/ZZZZZZZZ', { headers: owner.bearer }), 404)
    expectError(await t.json('/api/albums/..%2F..%2Fetc', { headers: owner.bearer }), 404)
  })
})

describe('PUT /api/albums/:id', () => {
  test('partial update of title, description and visibility', async () => {
    const album = await createAlbum({ title: 'before', description: 'keep me' })
    const res = await t.json(`/api/albums/${album.id}`, send('PUT', { title: 'after', isPublic: true }, owner.bearer))
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.album).toMatchObject({
      id: album.id,
      title: 'after',
      description: 'keep me',
      isPublic: true,
      hasPassword: false,
    })
    expect(Date.parse(res.body.album.updatedAt)).toBeGreaterThanOrEqual(Date.parse(album.updatedAt))
    const cleared = await t.json(`/api/albums/${album.id}`, send('PUT', { description: '' }, owner.bearer))
    expect(cleared.body.album.description).toBe('')
  })

  test('a password string sets it; null or "" removes it', async () => {
    const album = await createAlbum({ title: 'pw', isPublic: true })
    for (const remove of [null, '']) {
      await t.json(`/api/albums/${album.id}`, send('PUT', { password: 'pw-1' }, owner.bearer))
      expect((await t.json(`/api/albums/${album.id}`)).status).toBe(403)
      const res = await t.json(`/api/albums/${album.id}`, send('PUT', { password: remove }, owner.bearer))
      expect(res.body.album.hasPassword).toBe(false)
      expect((await t.json(`/api/albums/${album.id}`)).status).toBe(200)
    }
  })

  test('invalid fields and an empty update are 400', async () => {
    const album = await createAlbum({ title: 'v' })
    for (const body of [
      {},
      { title: '' },
      { title: 'x'.repeat(101) },
      { description: 'd'.repeat(1001) },
      { isPublic: 'true' },
      { password: 5 },
    ]) {
      expectError(await t.json(`/api/albums/${album.id}`, send('PUT', body, owner.bearer)), 400)
    }
  })

  test("someone else's album is 404, and it is left unchanged", async () => {
    const album = await createAlbum({ title: 'not yours', isPublic: true })
    expectError(await t.json(`/api/albums/${album.id}`, send('PUT', { title: 'hijacked' }, other.bearer)), 404)
    expect((await t.json(`/api/albums/${album.id}`)).body.album.title).toBe('not yours')
  })
})

describe('DELETE /api/albums/:id', () => {
  test('soft delete: 404 to everyone afterwards, images stay, title reusable', async () => {
    const album = await createAlbum({ title: 'Ephemeral', isPublic: true })
    const image = await uploadImage(t, owner.keyHeader)
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer))

    expectError(await t.json(`/api/albums/${album.id}`, { method: 'DELETE', headers: other.bearer }), 404)
    const res = await t.json(`/api/albums/${album.id}`, { method: 'DELETE', headers: owner.bearer })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })

    expectError(await t.json(`/api/albums/${album.id}`), 404)
    expectError(await t.json(`/api/albums/${album.id}`, { headers: owner.bearer }), 404)
    expectError(await t.json(`/api/albums/${album.id}`, send('PUT', { title: 'x' }, owner.bearer)), 404)
    expectError(await t.json(`/api/albums/${album.id}`, { method: 'DELETE', headers: owner.bearer }), 404)
    expectError(await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer)), 404)
    expect((await t.json(`/api/v1/image/${image.id}`)).status).toBe(200)
    // The row is kept (soft delete).
    const [row] = await t.server.db.select({ deletedAt: albums.deletedAt }).from(albums).where(eq(albums.id, album.id))
    expect(row.deletedAt!.getTime()).toBeGreaterThan(0)

    const again = await createAlbum({ title: 'Ephemeral' })
    expect(again.id).not.toBe(album.id)
  })
})

describe('album images', () => {
  test("add: the caller's image only; twice is a no-op; cover is the most recently added", async () => {
    const album = await createAlbum({ title: 'adds' })
    const first = await uploadImage(t, owner.keyHeader)
    const second = await uploadImage(t, owner.keyHeader)
    const foreign = await uploadImage(t, other.keyHeader)

    const one = await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: first.id }, owner.bearer))
    expect(one.status).toBe(200)
    expect(one.body.success).toBe(true)
    expect(one.body.album).toMatchObject({ id: album.id, imageCount: 1, cover: first.thumbnail })
    const two = await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: second.id }, owner.bearer))
    expect(two.body.album).toMatchObject({ imageCount: 2, cover: second.thumbnail })
    const again = await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: first.id }, owner.bearer))
    expect(again.status).toBe(200)
    expect(again.body.album).toMatchObject({ imageCount: 2, cover: second.thumbnail })

    expectError(
      await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: foreign.id }, owner.bearer)),
      404,
    )
    expectError(
      await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: 'ZZZZZZZZ' }, owner.bearer)),
      404,
    )
    expectError(await t.json(`/api/albums/${album.id}/images`, send('POST', {}, owner.bearer)), 400)
    // Someone else's album, even with their own image.
    expectError(
      await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: foreign.id }, other.bearer)),
      404,
    )
    expect((await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })).body.album.imageCount).toBe(2)
  })

  test('an image may be in several albums', async () => {
    const a = await createAlbum({ title: 'A' })
    const b = await createAlbum({ title: 'B' })
    const image = await uploadImage(t, owner.keyHeader)
    for (const album of [a, b]) {
      expect(
        (await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer))).body.album
          .imageCount,
      ).toBe(1)
    }
  })

  test("remove: { success }; not in the album 404; someone else's album 404", async () => {
    const album = await createAlbum({ title: 'removes' })
    const image = await uploadImage(t, owner.keyHeader)
    const outside = await uploadImage(t, owner.keyHeader)
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer))

    expectError(
      await t.json(`/api/albums/${album.id}/images/${image.id}`, { method: 'DELETE', headers: other.bearer }),
      404,
    )
    expectError(
      await t.json(`/api/albums/${album.id}/images/${outside.id}`, { method: 'DELETE', headers: owner.bearer }),
      404,
    )
    const res = await t.json(`/api/albums/${album.id}/images/${image.id}`, { method: 'DELETE', headers: owner.bearer })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expectError(
      await t.json(`/api/albums/${album.id}/images/${image.id}`, { method: 'DELETE', headers: owner.bearer }),
      404,
    )
    const view = await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })
    expect(view.body.album).toMatchObject({ imageCount: 0, cover: null })
    // The image itself stays.
    expect((await t.json(`/api/v1/image/${image.id}`)).status).toBe(200)
  })

  test('a deleted image leaves the album', async () => {
    const album = await createAlbum({ title: 'deletions' })
    const image = await uploadImage(t, owner.keyHeader)
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer))
    expect((await t.fetch(`/api/v1/image/${image.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(
      200,
    )
    expect((await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })).body.album.imageCount).toBe(0)
  })
})

describe('upload album / folder fields', () => {
  test('a folder name creates the album on first use and reuses it afterwards', async () => {
    const user = await userWithKey(t)
    const first = await uploadImage(t, user.keyHeader, { folder: 'Screenshots' })
    const second = await uploadImage(t, user.keyHeader, { album: 'Screenshots' })
    const list = await t.json('/api/albums', { headers: user.bearer })
    expect(list.body.albums).toHaveLength(1)
    const album = list.body.albums[0]
    expect(album).toMatchObject({ title: 'Screenshots', isPublic: true, imageCount: 2 })
    const view = await t.json(`/api/albums/${album.id}`, { headers: user.bearer })
    expect(view.body.images.map((i: any) => i.id).sort()).toEqual([first.id, second.id].sort())
  })

  test('an album id selects that album', async () => {
    const album = await createAlbum({ title: 'by id' })
    const image = await uploadImage(t, owner.keyHeader, { album: album.id })
    const view = await t.json(`/api/albums/${album.id}`, { headers: owner.bearer })
    expect(view.body.images.map((i: any) => i.id)).toEqual([image.id])
  })

  test('an auto-created album inherits the visibility of the upload', async () => {
    const user = await userWithKey(t)
    await uploadImage(t, user.keyHeader, { folder: 'Private stuff', visibility: 'private' })
    await uploadImage(t, user.keyHeader, { folder: 'Shorthand', private: 'yes' })
    await uploadImage(t, user.keyHeader, { folder: 'Public stuff' })
    const albums = (await t.json('/api/albums', { headers: user.bearer })).body.albums
    const byTitle = Object.fromEntries(albums.map((a: any) => [a.title, a.isPublic]))
    expect(byTitle).toEqual({ 'Private stuff': false, Shorthand: false, 'Public stuff': true })
    const priv = albums.find((a: any) => a.title === 'Private stuff')
    expectError(await t.json(`/api/albums/${priv.id}`), 404)
  })

  test('a private account makes the auto-created album private', async () => {
    const user = await userWithKey(t)
    await t.json('/api/account', { method: 'PATCH', ...jsonBody({ privateAccount: true }, user.bearer) })
    await uploadImage(t, user.keyHeader, { folder: 'Hidden' })
    const albums = (await t.json('/api/albums', { headers: user.bearer })).body.albums
    expect(albums[0]).toMatchObject({ title: 'Hidden', isPublic: false })
  })

  test("a deleted album's title names a new folder; someone else's album id is just a folder name", async () => {
    const user = await userWithKey(t)
    await uploadImage(t, user.keyHeader, { folder: 'Reused' })
    const old = (await t.json('/api/albums', { headers: user.bearer })).body.albums[0]
    await t.fetch(`/api/albums/${old.id}`, { method: 'DELETE', headers: user.bearer })
    await uploadImage(t, user.keyHeader, { folder: 'Reused' })
    const albums = (await t.json('/api/albums', { headers: user.bearer })).body.albums
    expect(albums).toHaveLength(1)
    expect(albums[0].id).not.toBe(old.id)
    expect(albums[0].imageCount).toBe(1)

    const foreign = await createAlbum({ title: 'foreign' })
    await uploadImage(t, user.keyHeader, { album: foreign.id })
    expect((await t.json(`/api/albums/${foreign.id}`, { headers: owner.bearer })).body.album.imageCount).toBe(0)
    const titles = (await t.json('/api/albums', { headers: user.bearer })).body.albums.map((a: any) => a.title)
    expect(titles).toContain(foreign.id)
  })
})

describe('documentation', () => {
  test('every album endpoint is in /swagger/json with its responses', async () => {
    const doc = (await t.json('/swagger/json')).body
    const ops: [string, string, string[]][] = [
      ['/api/albums', 'get', ['200', '401']],
      ['/api/albums', 'post', ['201', '400', '401']],
      ['/api/albums/{id}', 'get', ['200', '403', '404']],
      ['/api/albums/{id}', 'put', ['200', '400', '404']],
      ['/api/albums/{id}', 'delete', ['200', '404']],
      ['/api/albums/{id}/images', 'post', ['200', '404']],
      ['/api/albums/{id}/images/{imageId}', 'delete', ['200', '404']],
    ]
    for (const [path, method, statuses] of ops) {
      const op = doc.paths[path]?.[method]
      expect(op).toBeDefined()
      for (const s of statuses) expect(op.responses[s]).toBeDefined()
    }
    const view = doc.paths['/api/albums/{id}'].get
    expect(view.parameters.map((p: any) => `${p.in}:${p.name.toLowerCase()}`).sort()).toEqual([
      'header:x-album-password',
      'path:id',
      'query:password',
    ])
  })
})
