import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { thumbnailKey } from '../../src/storage'
import { type TestServer, userWithKey } from '../helpers'
import { dataSnapshot, ownEverything, resourceFor, send, startServer, uploadWith } from './support'

// Account A owns one of everything; account B (an ordinary user with its own JWT and key, and resources of its own)
// tries every route of /swagger/json that names a resource, against A's resources. Every attempt must be refused
// (404, or 403 for admin routes) and leave every row and file exactly as it was.

type Account = Awaited<ReturnType<typeof userWithKey>>
let t: TestServer
let a: Account
let b: Account
const A: Record<string, string> = {}
const B: Record<string, string> = {}
/** Strings only A's data holds: none may show up in anything B can read. */
const MARKERS = ['a-secret-file', 'a-secret-album', 'a-secret-profile', 'a-secret-key', 'a-secret-hook']

beforeAll(async () => {
  t = await startServer({ GLOBAL_RATE_LIMIT: '100000' })
  a = await userWithKey(t)
  b = await userWithKey(t)
  Object.assign(A, await ownEverything(t, a, 'a'))
  Object.assign(B, await ownEverything(t, b, 'b'))
}, 30_000)
afterAll(() => t.stop())

/** Reads anyone may make, by the contract: the image details by id (private too), and public profiles. */
const PUBLIC_BY_DESIGN = new Set(['get /api/v1/image/{id}', 'get /api/users/{username}'])

/** Valid bodies, so a refusal can only be about ownership. B's own resources are used where one is needed. */
function bodyFor(method: string, path: string): unknown {
  const key = `${method} ${path}`
  const bodies: Record<string, unknown> = {
    'patch /api/v1/image/{id}': { visibility: 'public', nsfw: true },
    'patch /api/images/{id}': { visibility: 'public', nsfw: true },
    'post /api/v1/image/{id}/variants': { width: 100, format: 'webp' },
    'put /api/albums/{id}': { title: 'stolen', isPublic: true, password: 'mine now' },
    'post /api/albums/{id}/images': { imageId: B.image },
    'put /api/embeds/{id}': { name: 'stolen', title: 'stolen' },
    'patch /api/images/{id}/embed': { embed_profile_id: Number(B.profile) },
    'patch /api/admin/users/{id}': { banned: true, role: 'user' },
    'post /api/admin/reports/{id}/action': { deleteImage: true, banOwner: true },
    'post /api/admin/reports/{id}/dismiss': {},
    'post /api/admin/images/{id}/block': { reason: 'stolen', keepThumbnail: true },
  }
  return bodies[key]
}

const both = () => ({ ...b.keyHeader, ...b.bearer })

describe('cross-account matrix: B against A', () => {
  test('A has one of everything (the matrix is not vacuous)', () => {
    for (const name of ['image', 'album', 'profile', 'key', 'user']) expect(A[name], name).toBeDefined()
  })

  test('the snapshot covers the stored files through the storage interface (local disk or bucket)', async () => {
    const before = await dataSnapshot(t)
    for (const id of [A.image, B.image]) {
      expect(
        before.files.some((f) => f.startsWith(`originals/${id}.png `)),
        id,
      ).toBe(true)
      expect(
        before.files.some((f) => f.startsWith(`${thumbnailKey(id)} `)),
        id,
      ).toBe(true)
    }
    // A file that changes while no row does changes the hash: a thumbnail removed behind the API's back, then restored.
    const storage = t.server.deps.storage
    const key = thumbnailKey(A.image)
    const bytes = new Uint8Array(await storage.file(key).arrayBuffer())
    await storage.delete(key)
    const without = await dataSnapshot(t)
    expect(without.counts).toEqual(before.counts)
    expect(without.hash).not.toBe(before.hash)
    const restore = join(t.dataDir, 'restore.webp')
    await Bun.write(restore, bytes)
    await storage.put(key, restore)
    expect((await dataSnapshot(t)).hash).toBe(before.hash)
  })

  test('every route of /swagger/json that names a resource: 404 (or 403 for admin) and nothing changes', async () => {
    const doc = (await t.json('/swagger/json')).body
    const before = await dataSnapshot(t)
    let tried = 0
    for (const [path, operations] of Object.entries<Record<string, unknown>>(doc.paths)) {
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      if (params.length === 0) continue
      for (const method of Object.keys(operations)) {
        const key = `${method} ${path}`
        if (PUBLIC_BY_DESIGN.has(key)) continue
        const values = params.map((p) => resourceFor(A, path, p))
        // A route added later must be mapped above: the matrix is meant to cover every resource route.
        expect(
          values.every((v) => v !== undefined),
          `no resource of A's for ${key}: extend resourceFor() in support.ts`,
        ).toBe(true)
        const target = params.reduce((acc, p, i) => acc.replace(`{${p}}`, encodeURIComponent(values[i]!)), path)
        const body = bodyFor(method, path)
        const headers: Record<string, string> = { ...both(), 'tus-resumable': '1.0.0' }
        if (path.includes('/tus/'))
          Object.assign(headers, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' })
        const res = await t.fetch(target, {
          method: method.toUpperCase(),
          headers: body !== undefined ? { ...headers, 'content-type': 'application/json' } : headers,
          body:
            body !== undefined
              ? JSON.stringify(body)
              : path.includes('/tus/') && method === 'patch'
                ? 'x'.repeat(10)
                : undefined,
        })
        const text = await res.text()
        const allowed = path.startsWith('/api/admin/') ? [403] : [404]
        expect(allowed, `${method.toUpperCase()} ${target} answered ${res.status}: ${text.slice(0, 150)}`).toContain(
          res.status,
        )
        if (method !== 'head') expect(typeof JSON.parse(text).error, key).toBe('string')
        tried++
      }
    }
    expect(tried).toBeGreaterThanOrEqual(15)
    expect((await dataSnapshot(t)).hash).toBe(before.hash)
  })

  test("B's own resources cannot be used to reach A's: bulk-embed, album add, profile assignment, delete token", async () => {
    const before = await dataSnapshot(t)
    const attempts: [string, RequestInit][] = [
      // A's image into B's album, B's profile onto A's image, A's profile onto B's image (one and many).
      [`/api/albums/${B.album}/images`, send('POST', { imageId: A.image }, both())],
      [`/api/images/${B.image}/embed`, send('PATCH', { embed_profile_id: Number(A.profile) }, both())],
      ['/api/images/bulk-embed', send('PATCH', { image_ids: [A.image], embed_profile_id: Number(B.profile) }, both())],
      ['/api/images/bulk-embed', send('PATCH', { image_ids: [B.image, A.image], embed_profile_id: null }, both())],
      ['/api/images/bulk-embed', send('PATCH', { image_ids: [B.image], embed_profile_id: Number(A.profile) }, both())],
      // A delete token is only for anonymous uploads: a guess on A's image is a 404.
      [`/api/v1/image/${A.image}`, { method: 'DELETE', headers: { 'x-delete-token': 'guess' } }],
      // A's private album, to B and to nobody.
      [`/api/albums/${A.album}`, { headers: both() }],
      [`/api/albums/${A.album}`, {}],
    ]
    for (const [path, init] of attempts) {
      const res = await t.json(path, init)
      expect(`${init.method ?? 'GET'} ${path} ${res.status}`).toBe(`${init.method ?? 'GET'} ${path} 404`)
      expect(typeof res.body.error).toBe('string')
    }
    expect((await dataSnapshot(t)).hash).toBe(before.hash)
    // Nor did B's profile change (its images still use it).
    expect((await t.json(`/api/embeds`, { headers: b.bearer })).body.profiles).toHaveLength(1)
  })

  test("nothing B can list or read shows any of A's private data", async () => {
    const doc = (await t.json('/swagger/json')).body
    let read = 0
    for (const [path, operations] of Object.entries<Record<string, { security?: unknown[] }>>(doc.paths)) {
      if (path.includes('{') || !operations.get || !operations.get.security) continue
      const res = await t.fetch(path, { headers: both() })
      const text = await res.text()
      for (const marker of MARKERS) expect(text.includes(marker), `GET ${path} shows ${marker}`).toBe(false)
      expect(text.includes(A.image), `GET ${path} shows A's image id`).toBe(false)
      expect(text.includes(A.album), `GET ${path} shows A's album id`).toBe(false)
      read++
    }
    expect(read).toBeGreaterThanOrEqual(6)
    // The public feeds do not show A's private image either.
    for (const path of ['/api/gallery', '/api/search?q=secret', `/api/users/${a.user.username}`]) {
      expect((await (await t.fetch(path)).text()).includes(A.image), path).toBe(false)
    }
  })

  test("an upload by B naming A's album id goes to a folder of B's, never into A's album", async () => {
    const albumBefore = (await t.json(`/api/albums/${A.album}`, { headers: a.bearer })).body
    for (const [field, path, headers] of [
      ['album', '/api/v1/upload', b.keyHeader],
      ['folder', '/api/upload', b.bearer],
    ] as const) {
      const res = await uploadWith(t, headers, { [field]: A.album }, undefined, path)
      expect([201, 400, 404]).toContain(res.status)
    }
    const albumAfter = (await t.json(`/api/albums/${A.album}`, { headers: a.bearer })).body
    expect(albumAfter.images.map((i: { id: string }) => i.id)).toEqual(
      albumBefore.images.map((i: { id: string }) => i.id),
    )
    expect(albumAfter.album.imageCount).toBe(albumBefore.album.imageCount)
  })

  test("A's data is intact and A can still use all of it", async () => {
    const image = await t.json(`/api/v1/image/${A.image}`)
    expect(image.body.data).toMatchObject({ visibility: 'private', nsfw: false })
    const album = await t.json(`/api/albums/${A.album}`, { headers: a.bearer })
    expect(album.body.album).toMatchObject({ title: 'a-secret-album', isPublic: false, hasPassword: false })
    const profiles = (await t.json('/api/embeds', { headers: a.bearer })).body.profiles
    expect(profiles.map((p: { name: string }) => p.name)).toEqual(['a-secret-profile'])
    const keys = (await t.json('/api/keys', { headers: a.bearer })).body.keys
    expect(keys.map((k: { name: string }) => k.name).sort()).toEqual(['a-secret-key', 'test'])
    expect((await t.json('/api/v1/me', { headers: a.keyHeader })).body.totalImages).toBe(1)
    expect((await t.json('/api/auth/me', { headers: a.bearer })).status).toBe(200)
  })
})
