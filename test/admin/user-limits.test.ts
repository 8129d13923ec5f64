/**
 * An account's limit overrides (PATCH /api/admin/users/:id `storageLimit`, `uploadsPerHour`; null: the tier's), against
 * the real server: every upload door (API multipart, web with a JWT, Chevereto, tus, URL uploads) is held to the
 * override from the next request, /api/v1/me and /api/account/usage report it, and on PostgreSQL a second instance
 * sees it at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { engine } from '../../src/db/engine'
import { HOUR_MS } from '../../src/lib/time'
import { type Bytes, makeImage, makeNoisePng, uploadForm } from '../fixtures'
import {
  jsonBody,
  makeAdmin,
  startInstancePair,
  startTestServer,
  type TestServer,
  testClock,
  userWithKey,
} from '../helpers'

// Small tier limits, so a few small files reach them.
const UNVERIFIED_QUOTA = 60_000
const VERIFIED_QUOTA = 90_000
const PER_HOUR = 5
const MAX_FILE = 200_000
const ENV = {
  UNVERIFIED_STORAGE_LIMIT: String(UNVERIFIED_QUOTA),
  VERIFIED_STORAGE_LIMIT: String(VERIFIED_QUOTA),
  UPLOADS_PER_HOUR: String(PER_HOUR),
  MAX_FILE_SIZE: String(MAX_FILE),
  URL_UPLOAD_ALLOW_PRIVATE: 'true',
}
const TUS = { 'tus-resumable': '1.0.0' }

type Account = Awaited<ReturnType<typeof userWithKey>>

let t: TestServer
let admin: Account
const clock = testClock()
let seed = 1
/** A small PNG no other upload of this file sends. */
const fresh = () => makeImage('png', 12, 9, seed++)

/** Serves one picture for the URL uploads (a private address: URL_UPLOAD_ALLOW_PRIVATE is on). */
let pictures: ReturnType<typeof Bun.serve>
let picture: Bytes

beforeAll(async () => {
  picture = await makeImage('png', 20, 10, 999)
  pictures = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(picture) })
  t = await startTestServer(ENV, { now: clock.now })
  admin = await userWithKey(t)
  await makeAdmin(t, admin.user.id)
})
afterAll(async () => {
  await t.stop()
  pictures.stop(true)
})

const patchUser = (server: TestServer, id: number, body: unknown, headers: Record<string, string> = admin.bearer) =>
  server.json(`/api/admin/users/${id}`, { method: 'PATCH', ...jsonBody(body, headers) })
const listed = async (id: number) =>
  (await t.json('/api/admin/users?limit=100', { headers: admin.bearer })).body.users.find((u: any) => u.id === id)
const me = async (server: TestServer, who: Account) =>
  (await server.json('/api/v1/me', { headers: who.keyHeader })).body

/** Every upload door, each sending one file as `who`; the answer's status. */
const doors = {
  api: async (who: Account, bytes: Bytes, server = t) =>
    (
      await server.fetch('/api/v1/upload', {
        method: 'POST',
        headers: who.keyHeader,
        body: uploadForm([{ bytes }]),
      })
    ).status,
  web: async (who: Account, bytes: Bytes) =>
    (await t.fetch('/api/upload', { method: 'POST', headers: who.bearer, body: uploadForm([{ bytes }]) })).status,
  chevereto: async (who: Account, bytes: Bytes) => {
    const form = new FormData()
    form.append('key', who.apiKey)
    form.append('source', new Blob([bytes], { type: 'image/png' }), 'shot.png')
    return (await t.fetch('/api/1/upload', { method: 'POST', body: form })).status
  },
  /** tus: the creation answers the limits first (no body sent yet); a created upload is then sent whole. */
  tus: async (who: Account, bytes: Bytes) => {
    const created = await t.fetch('/api/v1/tus', {
      method: 'POST',
      headers: { ...TUS, ...who.keyHeader, 'upload-length': String(bytes.length) },
    })
    if (created.status !== 201) return created.status
    const sent = await fetch(created.headers.get('location')!, {
      method: 'PATCH',
      headers: { ...TUS, ...who.keyHeader, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' },
      body: bytes,
    })
    return sent.status === 204 || sent.status === 200 ? 201 : sent.status
  },
  /** A `url` field: the picture server's file (the bytes argument is not sent). */
  url: async (who: Account, _bytes: Bytes) => {
    const form = new FormData()
    form.append('url', `http://127.0.0.1:${pictures.port}/p${seed++}.png`)
    return (await t.fetch('/api/v1/upload', { method: 'POST', headers: who.keyHeader, body: form })).status
  },
}

describe('PATCH /api/admin/users/:id: storageLimit and uploadsPerHour', () => {
  test('sets and clears the overrides; the answer and the list show them and the limits in force', async () => {
    const user = await userWithKey(t)
    let res = await patchUser(t, user.user.id, { storageLimit: 123_456, uploadsPerHour: 7 })
    expect(res.status).toBe(200)
    const expected = {
      storageLimit: 123_456,
      uploadsPerHour: 7,
      effective: { storageLimit: 123_456, uploadsPerHour: 7 },
    }
    expect(res.body.user).toMatchObject({ id: user.user.id, ...expected })
    expect(await listed(user.user.id)).toMatchObject(expected)

    // Only the field sent changes; null goes back to the tier's (unverified here).
    res = await patchUser(t, user.user.id, { storageLimit: null })
    expect(res.body.user).toMatchObject({
      storageLimit: null,
      uploadsPerHour: 7,
      effective: { storageLimit: UNVERIFIED_QUOTA, uploadsPerHour: 7 },
    })
    // The tier follows the account: verified now.
    res = await patchUser(t, user.user.id, { emailVerified: true, uploadsPerHour: null })
    const tierOnly = {
      storageLimit: null,
      uploadsPerHour: null,
      effective: { storageLimit: VERIFIED_QUOTA, uploadsPerHour: PER_HOUR },
    }
    expect(res.body.user).toMatchObject(tierOnly)
    expect(await listed(user.user.id)).toMatchObject(tierOnly)

    // Zero is a limit (nothing more may be stored, no upload this hour), not "none".
    res = await patchUser(t, user.user.id, { storageLimit: 0, uploadsPerHour: 0 })
    expect(res.body.user.effective).toEqual({ storageLimit: 0, uploadsPerHour: 0 })
  })

  test('invalid values: 400 naming the field, and nothing changes', async () => {
    const user = await userWithKey(t)
    await patchUser(t, user.user.id, { storageLimit: 5000, uploadsPerHour: 3 })
    const before = await listed(user.user.id)
    for (const [field, value] of [
      ['storageLimit', -1],
      ['storageLimit', 1.5],
      ['storageLimit', '5000'],
      ['storageLimit', true],
      ['storageLimit', {}],
      ['storageLimit', 2 ** 53],
      ['uploadsPerHour', -1],
      ['uploadsPerHour', 2.5],
      ['uploadsPerHour', '10'],
      ['uploadsPerHour', false],
      ['uploadsPerHour', []],
      ['uploadsPerHour', 2 ** 31],
    ] as const) {
      // With a valid field beside it, which must not be applied either.
      const res = await patchUser(t, user.user.id, { [field]: value, banned: false, role: 'user' })
      expect({ field, value, status: res.status }).toEqual({ field, value, status: 400 })
      expect(res.body.error).toContain(field)
    }
    expect(await listed(user.user.id)).toEqual(before)
  })

  test('a non-admin: 403 (its own account too), no token: 401; nothing changes', async () => {
    const user = await userWithKey(t)
    for (const body of [{ storageLimit: 10 ** 9 }, { uploadsPerHour: 1000 }, { storageLimit: null }]) {
      expect((await patchUser(t, user.user.id, body, user.bearer)).status).toBe(403)
      expect((await patchUser(t, admin.user.id, body, user.bearer)).status).toBe(403)
      expect((await patchUser(t, user.user.id, body, {})).status).toBe(401)
    }
    expect(await listed(user.user.id)).toMatchObject({ storageLimit: null, uploadsPerHour: null })
    expect((await me(t, user)).storage.limit).toBe(UNVERIFIED_QUOTA)
  })

  test('an unknown account: 404', async () => {
    expect((await patchUser(t, 99_999_999, { storageLimit: 1 })).status).toBe(404)
  })
})

describe('the storage override', () => {
  test('below what is stored: every door refuses the next upload with 413, nothing counted; /me and usage show it', async () => {
    const user = await userWithKey(t)
    expect(await doors.api(user, await fresh())).toBe(201)
    const used = (await me(t, user)).storage.used
    expect((await patchUser(t, user.user.id, { storageLimit: used - 1 })).status).toBe(200)
    const storage = { used, limit: used - 1, remaining: 0 }
    expect((await me(t, user)).storage).toEqual(storage)
    expect((await t.json('/api/account/usage', { headers: user.bearer })).body.storage).toEqual(storage)

    for (const [door, send] of Object.entries(doors)) {
      expect({ door, status: await send(user, await fresh()) }).toEqual({ door, status: 413 })
    }
    expect(await me(t, user)).toMatchObject({ totalImages: 1, storage })

    // null: the tier's limit again, which has room.
    expect((await patchUser(t, user.user.id, { storageLimit: null })).status).toBe(200)
    expect((await me(t, user)).storage).toEqual({ used, limit: UNVERIFIED_QUOTA, remaining: UNVERIFIED_QUOTA - used })
    expect(await doors.api(user, await fresh())).toBe(201)
  })

  test('above the tier: an unverified account stores past its tier limit; null restores the tier (and its 413)', async () => {
    const user = await userWithKey(t)
    const big = await makeNoisePng(150)
    expect(big.length).toBeGreaterThan(UNVERIFIED_QUOTA)
    expect(big.length).toBeLessThan(MAX_FILE)
    expect(await doors.api(user, big)).toBe(413)

    const limit = 10 * big.length
    await patchUser(t, user.user.id, { storageLimit: limit })
    expect((await me(t, user)).storage.limit).toBe(limit)
    expect(await doors.api(user, big)).toBe(201)
    expect(await doors.web(user, await fresh())).toBe(201)
    expect(await doors.tus(user, await fresh())).toBe(201)

    await patchUser(t, user.user.id, { storageLimit: null })
    const usage = await me(t, user)
    expect(usage.storage).toMatchObject({ limit: UNVERIFIED_QUOTA, remaining: 0 })
    expect(usage.storage.used).toBeGreaterThan(UNVERIFIED_QUOTA)
    expect(await doors.api(user, await fresh())).toBe(413)
  })

  test("an admin's account is held to an override too; null gives back the unlimited tier", async () => {
    const other = await userWithKey(t)
    await makeAdmin(t, other.user.id)
    expect((await me(t, other)).storage.limit).toBeNull()
    await patchUser(t, other.user.id, { storageLimit: 10 })
    expect((await me(t, other)).storage).toEqual({ used: 0, limit: 10, remaining: 10 })
    expect(await doors.api(other, await fresh())).toBe(413)
    await patchUser(t, other.user.id, { storageLimit: null })
    expect((await me(t, other)).storage).toEqual({ used: 0, limit: null, remaining: null })
    expect(await doors.api(other, await fresh())).toBe(201)
  })
})

describe('the uploads-per-hour override', () => {
  test('the (n+1)th upload in the hour is 429 on every door; /me and usage show it; the window ends on time', async () => {
    const start = Date.now()
    clock.set(start)
    try {
      const user = await userWithKey(t)
      await patchUser(t, user.user.id, { uploadsPerHour: 2 })
      expect(await doors.api(user, await fresh())).toBe(201)
      expect(await doors.web(user, await fresh())).toBe(201)
      const rate = { limit: 2, used: 2, remaining: 0 }
      expect((await me(t, user)).rateLimit).toMatchObject(rate)
      expect((await t.json('/api/account/usage', { headers: user.bearer })).body.rateLimit).toMatchObject(rate)

      const refused = await t.fetch('/api/v1/upload', {
        method: 'POST',
        headers: user.keyHeader,
        body: uploadForm([{ bytes: await fresh() }]),
      })
      expect(refused.status).toBe(429)
      expect(refused.headers.get('ratelimit-limit')).toBe('2')
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      for (const [door, send] of Object.entries(doors)) {
        expect({ door, status: await send(user, await fresh()) }).toEqual({ door, status: 429 })
      }

      // On the window's last millisecond still refused; at its end a new one starts.
      clock.set(start + HOUR_MS - 1)
      expect(await doors.api(user, await fresh())).toBe(429)
      clock.set(start + HOUR_MS)
      expect(await doors.api(user, await fresh())).toBe(201)
      expect(await doors.api(user, await fresh())).toBe(201)
      expect(await doors.api(user, await fresh())).toBe(429)

      // Raised: the same window has room at once. null: the tier's figure.
      await patchUser(t, user.user.id, { uploadsPerHour: 3 })
      expect(await doors.api(user, await fresh())).toBe(201)
      await patchUser(t, user.user.id, { uploadsPerHour: null })
      expect((await me(t, user)).rateLimit).toMatchObject({ limit: PER_HOUR, used: 3, remaining: PER_HOUR - 3 })
      expect(await doors.api(user, await fresh())).toBe(201)
      expect(await doors.api(user, await fresh())).toBe(201)
      expect(await doors.api(user, await fresh())).toBe(429)
    } finally {
      clock.reset()
    }
  })

  test('above the tier: more uploads than the tier allows; 0: none at all', async () => {
    const user = await userWithKey(t)
    await patchUser(t, user.user.id, { uploadsPerHour: PER_HOUR + 2 })
    for (let i = 0; i < PER_HOUR + 2; i++) expect(await doors.api(user, await fresh())).toBe(201)
    expect(await doors.api(user, await fresh())).toBe(429)
    expect((await me(t, user)).rateLimit).toMatchObject({ limit: PER_HOUR + 2, remaining: 0 })

    const none = await userWithKey(t)
    await patchUser(t, none.user.id, { uploadsPerHour: 0 })
    expect(await doors.api(none, await fresh())).toBe(429)
    expect((await me(t, none)).rateLimit).toMatchObject({ limit: 0, used: 0, remaining: 0 })
  })

  test("an admin's account (exempt by its tier) is held to an override", async () => {
    const other = await userWithKey(t)
    await makeAdmin(t, other.user.id)
    await patchUser(t, other.user.id, { uploadsPerHour: 1 })
    expect(await doors.api(other, await fresh())).toBe(201)
    expect(await doors.api(other, await fresh())).toBe(429)
    await patchUser(t, other.user.id, { uploadsPerHour: null })
    expect(await doors.api(other, await fresh())).toBe(201)
  })
})

describe.skipIf(engine !== 'pg')('two instances on one database', () => {
  let instances: Awaited<ReturnType<typeof startInstancePair>>
  beforeAll(async () => {
    instances = await startInstancePair(ENV)
  })
  afterAll(() => instances.stop())

  test('a limit changed through one instance holds on the other at once: its uploads and its /me', async () => {
    const [a, b] = instances.pair
    const boss = await userWithKey(a)
    await makeAdmin(a, boss.user.id)
    const user = await userWithKey(a)
    // The other instance has served the account already, under the tier's limits.
    expect(await doors.api(user, await fresh(), b)).toBe(201)
    expect((await me(b, user)).storage.limit).toBe(UNVERIFIED_QUOTA)

    const used = (await me(b, user)).storage.used
    expect((await patchUser(a, user.user.id, { storageLimit: used, uploadsPerHour: 4 }, boss.bearer)).status).toBe(200)
    expect(await me(b, user)).toMatchObject({
      storage: { used, limit: used, remaining: 0 },
      rateLimit: { limit: 4, used: 1, remaining: 3 },
    })
    expect(await doors.api(user, await fresh(), b)).toBe(413)

    await patchUser(a, user.user.id, { storageLimit: null, uploadsPerHour: 1 }, boss.bearer)
    expect(await doors.api(user, await fresh(), b)).toBe(429)
    expect((await me(b, user)).storage.limit).toBe(UNVERIFIED_QUOTA)
  })
})
