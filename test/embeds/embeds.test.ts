import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { parse } from 'node-html-parser'
import { engine } from '../../src/db/engine'
import { images } from '../../src/db/schema'
import { humanSize } from '../../src/lib/size'
import { fillPlaceholders } from '../../src/modules/embeds/service'
import { makeImage, uploadForm } from '../fixtures'
import { makeAdmin, registerUser, sqliteOf, type TestServer, userWithKey } from '../helpers'
import { expectError, send, startServer, uploadImage } from '../pages/support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let other: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer({ SITE_NAME: 'Pixbin', SITE_COLOR: '#112233' })
  owner = await userWithKey(t)
  other = await userWithKey(t)
})
afterAll(() => t.stop())

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

async function createProfile(body: Record<string, unknown>, headers = owner.bearer) {
  const res = await t.json('/api/embeds', send('POST', body, headers))
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.profile
}

const embedProfileOf = async (imageId: string) =>
  (await t.server.db.select({ p: images.embedProfileId }).from(images).where(eq(images.id, imageId)))[0].p

async function pageMeta(imageId: string) {
  const res = await t.fetch(`/i/${imageId}`)
  expect(res.status).toBe(200)
  const doc = parse(await res.text())
  const meta = (key: string) =>
    doc.querySelector(`meta[property="${key}"]`)?.getAttribute('content') ??
    doc.querySelector(`meta[name="${key}"]`)?.getAttribute('content')
  return { doc, meta }
}

describe('profile CRUD', () => {
  test('POST creates a profile with every field: 201 { success, profile }', async () => {
    const body = {
      name: 'Brand',
      title: 'My {filename}',
      description: 'Shot on {date}',
      color: '#FF00aa',
      author_name: 'Ann',
      author_url: 'https://example.com/ann',
      site_name: 'Ann Pics',
    }
    const res = await t.json('/api/embeds', send('POST', body, owner.bearer))
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    expect(res.body.profile).toEqual({
      id: expect.any(Number),
      ...body,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    })
    expect(Number.isInteger(res.body.profile.id) && res.body.profile.id > 0).toBe(true)
  })

  test('only name is required; unset fields are null', async () => {
    const profile = await createProfile({ name: 'Minimal' })
    expect(profile).toMatchObject({
      name: 'Minimal',
      title: null,
      description: null,
      color: null,
      author_name: null,
      author_url: null,
      site_name: null,
    })
  })

  test("GET lists the caller's profiles only", async () => {
    const user = await registerUser(t)
    const a = await createProfile({ name: 'one' }, user.bearer)
    const b = await createProfile({ name: 'two' }, user.bearer)
    const res = await t.json('/api/embeds', { headers: user.bearer })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.profiles.map((p: any) => p.id)).toEqual([a.id, b.id])
    expectError(await t.json('/api/embeds'), 401)
  })

  test('validation: name 1-100, text lengths, colour, author URL', async () => {
    const bad = [
      {},
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'ok', title: 't'.repeat(257) },
      { name: 'ok', description: 'd'.repeat(2049) },
      { name: 'ok', author_name: 'a'.repeat(257) },
      { name: 'ok', site_name: 's'.repeat(257) },
      { name: 'ok', color: 'red' },
      { name: 'ok', color: '#fff' },
      { name: 'ok', color: '3b82f6' },
      { name: 'ok', color: '#3b82f6 ' },
      { name: 'ok', color: '#GGGGGG' },
      { name: 'ok', color: '#3b82f6ff' },
      { name: 'ok', author_url: 'javascript:alert(1)' },
      { name: 'ok', author_url: 'ftp://example.com/' },
      { name: 'ok', author_url: 'example.com' },
      { name: 'ok', author_url: 'https://' },
      { name: 'ok', author_url: 'data:text/html,hi' },
      { name: 'ok', title: 5 },
    ]
    for (const body of bad) {
      const res = await t.json('/api/embeds', send('POST', body, owner.bearer))
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
    const max = await createProfile({
      name: 'n'.repeat(100),
      title: 't'.repeat(256),
      description: 'd'.repeat(2048),
      author_name: 'a'.repeat(256),
      site_name: 's'.repeat(256),
      color: '#abcdef',
      author_url: 'http://example.com/a?b=c#d',
    })
    expect(max.title.length).toBe(256)
  })

  test('PUT is a partial update; null or "" clears a field', async () => {
    const profile = await createProfile({ name: 'P', title: 'T', color: '#000000', author_url: 'https://a.example/' })
    const res = await t.json(`/api/embeds/${profile.id}`, send('PUT', { title: 'T2' }, owner.bearer))
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.profile).toMatchObject({
      id: profile.id,
      name: 'P',
      title: 'T2',
      color: '#000000',
      author_url: 'https://a.example/',
    })
    const cleared = await t.json(
      `/api/embeds/${profile.id}`,
      send('PUT', { color: null, author_url: '' }, owner.bearer),
    )
    expect(cleared.body.profile).toMatchObject({ title: 'T2', color: null, author_url: null })
    for (const body of [{}, { name: '' }, { color: 'blue' }, { author_url: 'mailto:a@b.c' }]) {
      expectError(await t.json(`/api/embeds/${profile.id}`, send('PUT', body, owner.bearer)), 400)
    }
  })

  test("someone else's or an unknown profile is 404 for PUT and DELETE", async () => {
    const profile = await createProfile({ name: 'mine' })
    expectError(await t.json(`/api/embeds/${profile.id}`, send('PUT', { name: 'theirs' }, other.bearer)), 404)
    expectError(await t.json(`/api/embeds/${profile.id}`, { method: 'DELETE', headers: other.bearer }), 404)
    expectError(await t.json('/api/embeds/999999', send('PUT', { name: 'x' }, owner.bearer)), 404)
    expectError(await t.json('/api/embeds/999999', { method: 'DELETE', headers: owner.bearer }), 404)
    const mine = (await t.json('/api/embeds', { headers: owner.bearer })).body.profiles.find(
      (p: any) => p.id === profile.id,
    )
    expect(mine.name).toBe('mine')
  })

  test('DELETE answers { success } and the profile is gone', async () => {
    const profile = await createProfile({ name: 'gone' })
    const res = await t.json(`/api/embeds/${profile.id}`, { method: 'DELETE', headers: owner.bearer })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expectError(await t.json(`/api/embeds/${profile.id}`, { method: 'DELETE', headers: owner.bearer }), 404)
  })
})

describe('the 25 profile limit', () => {
  test('the 26th profile is a 400; deleting one frees a slot', async () => {
    const user = await registerUser(t)
    const made = []
    for (let i = 0; i < 25; i++) made.push(await createProfile({ name: `p${i}` }, user.bearer))
    expectError(await t.json('/api/embeds', send('POST', { name: 'p25' }, user.bearer)), 400)
    expect((await t.json('/api/embeds', { headers: user.bearer })).body.profiles).toHaveLength(25)
    await t.fetch(`/api/embeds/${made[0].id}`, { method: 'DELETE', headers: user.bearer })
    expect((await t.json('/api/embeds', send('POST', { name: 'p25' }, user.bearer))).status).toBe(201)
  })

  test('holds under concurrent creates', async () => {
    const user = await registerUser(t)
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => t.json('/api/embeds', send('POST', { name: `c${i}` }, user.bearer))),
    )
    expect(results.filter((r) => r.status === 201)).toHaveLength(25)
    expect(results.filter((r) => r.status === 400)).toHaveLength(15)
    expect((await t.json('/api/embeds', { headers: user.bearer })).body.profiles).toHaveLength(25)
  })
})

describe('PATCH /api/images/:id/embed', () => {
  test('assigns and removes a profile', async () => {
    const image = await uploadImage(t, owner.keyHeader)
    const profile = await createProfile({ name: 'assign' })
    const res = await t.json(
      `/api/images/${image.id}/embed`,
      send('PATCH', { embed_profile_id: profile.id }, owner.bearer),
    )
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, id: image.id, embed_profile_id: profile.id })
    expect(await embedProfileOf(image.id)).toBe(profile.id)
    const cleared = await t.json(
      `/api/images/${image.id}/embed`,
      send('PATCH', { embed_profile_id: null }, owner.bearer),
    )
    expect(cleared.body).toEqual({ success: true, id: image.id, embed_profile_id: null })
    expect(await embedProfileOf(image.id)).toBeNull()
  })

  test("image or profile not the caller's: 404; bad body: 400; no JWT: 401", async () => {
    const mine = await uploadImage(t, owner.keyHeader)
    const theirs = await uploadImage(t, other.keyHeader)
    const myProfile = await createProfile({ name: 'mine' })
    const theirProfile = await createProfile({ name: 'theirs' }, other.bearer)
    expectError(
      await t.json(`/api/images/${theirs.id}/embed`, send('PATCH', { embed_profile_id: myProfile.id }, owner.bearer)),
      404,
    )
    expectError(
      await t.json(`/api/images/${mine.id}/embed`, send('PATCH', { embed_profile_id: theirProfile.id }, owner.bearer)),
      404,
    )
    expectError(
      await t.json(`/api/images/ZZZZZZZZ/embed`, send('PATCH', { embed_profile_id: null }, owner.bearer)),
      404,
    )
    expectError(
      await t.json(`/api/images/${mine.id}/embed`, send('PATCH', { embed_profile_id: 999999 }, owner.bearer)),
      404,
    )
    expectError(await t.json(`/api/images/${mine.id}/embed`, send('PATCH', {}, owner.bearer)), 400)
    expectError(
      await t.json(`/api/images/${mine.id}/embed`, send('PATCH', { embed_profile_id: 'x' }, owner.bearer)),
      400,
    )
    expectError(
      await t.json(`/api/images/${mine.id}/embed`, send('PATCH', { embed_profile_id: 1.5 }, owner.bearer)),
      400,
    )
    expectError(
      await t.json(`/api/images/${mine.id}/embed`, send('PATCH', { embed_profile_id: myProfile.id }, owner.keyHeader)),
      401,
    )
    expect(await embedProfileOf(theirs.id)).toBeNull()
    expect(await embedProfileOf(mine.id)).toBeNull()
  })
})

describe('PATCH /api/images/bulk-embed', () => {
  test('assigns to many images: { success, updated }', async () => {
    const images = await Promise.all([1, 2, 3].map(() => uploadImage(t, owner.keyHeader)))
    const profile = await createProfile({ name: 'bulk' })
    const ids = images.map((i) => i.id)
    const res = await t.json(
      '/api/images/bulk-embed',
      send('PATCH', { image_ids: [...ids, ids[0]], embed_profile_id: profile.id }, owner.bearer),
    )
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, updated: 3 })
    for (const id of ids) expect(await embedProfileOf(id)).toBe(profile.id)
    const cleared = await t.json(
      '/api/images/bulk-embed',
      send('PATCH', { image_ids: ids, embed_profile_id: null }, owner.bearer),
    )
    expect(cleared.body).toEqual({ success: true, updated: 3 })
    for (const id of ids) expect(await embedProfileOf(id)).toBeNull()
  })

  test('0 or 101 ids: 400', async () => {
    const profile = await createProfile({ name: 'limits' })
    expectError(
      await t.json(
        '/api/images/bulk-embed',
        send('PATCH', { image_ids: [], embed_profile_id: profile.id }, owner.bearer),
      ),
      400,
    )
    const many = Array.from({ length: 101 }, (_, i) => `img${String(i).padStart(5, '0')}`)
    expectError(
      await t.json(
        '/api/images/bulk-embed',
        send('PATCH', { image_ids: many, embed_profile_id: profile.id }, owner.bearer),
      ),
      400,
    )
    expectError(
      await t.json(
        '/api/images/bulk-embed',
        send('PATCH', { image_ids: 'abc', embed_profile_id: profile.id }, owner.bearer),
      ),
      400,
    )
    expectError(await t.json('/api/images/bulk-embed', send('PATCH', { image_ids: ['abcdefgh'] }, owner.bearer)), 400)
  })

  test("100 distinct ids of the caller's images: updated 100, every one changed; 101 of them: 400 and none changed", async () => {
    // An admin, so 101 images take two uploads (100 files at once, and no hourly window).
    const many = await userWithKey(t)
    await makeAdmin(t, many.user.id)
    const bytes = await makeImage('png', 8, 8, 5)
    const upload = (n: number) =>
      t.json('/api/v1/upload', {
        method: 'POST',
        headers: many.keyHeader,
        body: uploadForm(Array.from({ length: n }, () => ({ bytes }))),
      })
    const hundred = await upload(100)
    const one = await upload(1)
    const ids: string[] = [...hundred.body.images.map((i: { id: string }) => i.id), one.body.id]
    expect(new Set(ids).size).toBe(101)
    const profile = await createProfile({ name: 'hundred' }, many.bearer)
    const assign = (imageIds: string[]) =>
      t.json(
        '/api/images/bulk-embed',
        send('PATCH', { image_ids: imageIds, embed_profile_id: profile.id }, many.bearer),
      )

    const tooMany = await assign(ids)
    expectError(tooMany, 400)
    expect(tooMany.body.error).toBe('image_ids must have 1-100 items')
    const profiles = await Promise.all(ids.map(embedProfileOf))
    expect(ids.filter((_, i) => profiles[i] !== null)).toEqual([])

    expect((await assign(ids.slice(0, 100))).body).toEqual({ success: true, updated: 100 })
    const assigned = await Promise.all(ids.slice(0, 100).map(embedProfileOf))
    expect(ids.slice(0, 100).filter((_, i) => assigned[i] !== profile.id)).toEqual([])
    expect(await embedProfileOf(ids[100])).toBeNull()
  })

  test("all or nothing: a 404 naming the ids that are not the caller's, and nothing changes", async () => {
    const mine = await Promise.all([1, 2].map(() => uploadImage(t, owner.keyHeader)))
    const theirs = await uploadImage(t, other.keyHeader)
    const profile = await createProfile({ name: 'atomic' })
    const res = await t.json(
      '/api/images/bulk-embed',
      send(
        'PATCH',
        { image_ids: [mine[0].id, theirs.id, 'ZZZZZZZZ', mine[1].id], embed_profile_id: profile.id },
        owner.bearer,
      ),
    )
    expectError(res, 404)
    expect(res.body.ids.sort()).toEqual([theirs.id, 'ZZZZZZZZ'].sort())
    for (const image of [...mine, theirs]) expect(await embedProfileOf(image.id)).toBeNull()
  })

  test("someone else's profile: 404, nothing changes", async () => {
    const mine = await uploadImage(t, owner.keyHeader)
    const theirProfile = await createProfile({ name: 'not yours' }, other.bearer)
    expectError(
      await t.json(
        '/api/images/bulk-embed',
        send('PATCH', { image_ids: [mine.id], embed_profile_id: theirProfile.id }, owner.bearer),
      ),
      404,
    )
    expect(await embedProfileOf(mine.id)).toBeNull()
  })
})

describe('deleting a profile', () => {
  test('the images that used it revert to the default embed (ON DELETE SET NULL with foreign keys on)', async () => {
    // SQLite enforces foreign keys only with the pragma on (PostgreSQL always does).
    if (engine === 'sqlite')
      expect(
        (sqliteOf(t.server.db).$client.query('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys,
      ).toBe(1)
    const image = await uploadImage(t, owner.keyHeader, {}, { name: 'revert.png' })
    const keep = await uploadImage(t, owner.keyHeader)
    const profile = await createProfile({
      name: 'temp',
      title: 'Custom title',
      color: '#abcdef',
      site_name: 'Custom site',
    })
    const kept = await createProfile({ name: 'kept', title: 'Kept title' })
    await t.json(`/api/images/${image.id}/embed`, send('PATCH', { embed_profile_id: profile.id }, owner.bearer))
    await t.json(`/api/images/${keep.id}/embed`, send('PATCH', { embed_profile_id: kept.id }, owner.bearer))
    expect((await pageMeta(image.id)).meta('og:title')).toBe('Custom title')

    expect((await t.json(`/api/embeds/${profile.id}`, { method: 'DELETE', headers: owner.bearer })).status).toBe(200)
    expect(await embedProfileOf(image.id)).toBeNull()
    expect(await embedProfileOf(keep.id)).toBe(kept.id)
    const { meta } = await pageMeta(image.id)
    expect(meta('og:title')).toBe('revert.png')
    expect(meta('og:site_name')).toBe('Pixbin')
    expect(meta('theme-color')).toBe('#112233')
  })
})

describe('placeholders', () => {
  test('are filled per image on the viewer page and in oEmbed', async () => {
    const user = await userWithKey(t)
    const image = await uploadImage(t, user.keyHeader, {}, { name: 'sunset.png', width: 120, height: 80 })
    const profile = await createProfile(
      {
        name: 'placeholders',
        title: '{filename} by {username}',
        description: '{id} {width}x{height} {size} {mime} {date} views={views} {unknown}',
        author_name: '{username}',
        site_name: 'Site of {username}',
        color: '#00ff00',
        author_url: 'https://example.com/me',
      },
      user.bearer,
    )
    await t.json(`/api/images/${image.id}/embed`, send('PATCH', { embed_profile_id: profile.id }, user.bearer))
    const today = new Date().toISOString().slice(0, 10)
    const { meta } = await pageMeta(image.id)
    expect(meta('og:title')).toBe(`sunset.png by ${user.user.username}`)
    expect(meta('og:description')).toBe(
      `${image.id} 120x80 ${humanSize(image.size)} image/png ${today} views=1 {unknown}`,
    )
    expect(meta('og:site_name')).toBe(`Site of ${user.user.username}`)
    expect(meta('theme-color')).toBe('#00ff00')
    // A second load counts another view.
    expect((await pageMeta(image.id)).meta('og:description')).toContain('views=2')

    const oembed = await t.json(`/api/oembed?url=${encodeURIComponent(image.viewer)}`)
    expect(oembed.body).toMatchObject({
      title: `sunset.png by ${user.user.username}`,
      author_name: user.user.username,
      author_url: 'https://example.com/me',
      provider_name: `Site of ${user.user.username}`,
    })
  })

  test('fill in one pass: a value that looks like a placeholder is not expanded again', () => {
    const values = {
      filename: '{id}.png',
      id: 'abcdEFGH',
      width: 1,
      height: 2,
      size: 1258291,
      mime: 'image/png',
      date: new Date('2026-11-22T10:00:00Z'),
      views: 3,
      username: null,
    }
    expect(fillPlaceholders('{filename}|{id}|{size}|{date}|{username}|{{id}}', values)).toBe(
      '{id}.png|abcdEFGH|1.2 MB|2026-11-22|anonymous|{abcdEFGH}',
    )
  })

  test('human readable sizes', () => {
    expect(humanSize(512)).toBe('512 B')
    expect(humanSize(1024)).toBe('1 KB')
    expect(humanSize(1536)).toBe('1.5 KB')
    expect(humanSize(1258291)).toBe('1.2 MB')
    expect(humanSize(52428800)).toBe('50 MB')
  })
})

describe('documentation', () => {
  test('embed endpoints are in /swagger/json with their responses', async () => {
    const doc = (await t.json('/swagger/json')).body
    const ops: [string, string, string[]][] = [
      ['/api/embeds', 'get', ['200', '401']],
      ['/api/embeds', 'post', ['201', '400', '401']],
      ['/api/embeds/{id}', 'put', ['200', '400', '404']],
      ['/api/embeds/{id}', 'delete', ['200', '404']],
      ['/api/images/{id}/embed', 'patch', ['200', '400', '404']],
      ['/api/images/bulk-embed', 'patch', ['200', '400', '404']],
    ]
    for (const [path, method, statuses] of ops) {
      const op = doc.paths[path]?.[method]
      expect(op).toBeDefined()
      for (const s of statuses) expect(op.responses[s]).toBeDefined()
    }
  })
})
