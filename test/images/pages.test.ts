/**
 * Pages of the counted lists (the gallery, profiles, an owner's list: src/modules/images/counts.ts), found by summing
 * per-day counts instead of walking rows: every page of every size equals the same page cut by plain SQL (ORDER BY,
 * LIMIT, OFFSET) from the rows, with `total`, `totalPages` and `page` right, over images spread across days, with ties
 * in one millisecond, private, NSFW, expired (not swept) and banned owners' images mixed in. And a list pinned by its
 * `asOf` neither skips nor repeats an image when uploads land between two page requests, old-dated ones included.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rawRows } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { makeImage, uploadForm } from '../fixtures'
import { jsonBody, makeAdmin, registerUser, startTestServer, type TestServer, testClock, userWithKey } from '../helpers'

const DAY = 86_400_000
const START = Date.UTC(2026, 2, 1, 9)
const clock = testClock(START)
/** The order rows were inserted in, which breaks ties of one millisecond (src/db/order.ts). */
const INSERTION = engine === 'pg' ? 'i.seq' : 'i.rowid'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let other: Awaited<ReturnType<typeof userWithKey>>
let n = 0

async function upload(account: typeof owner, files: number, fields: Record<string, string> = {}) {
  const parts = await Promise.all(
    Array.from({ length: files }, async () => ({ bytes: await makeImage('png', 8, 8, ++n), name: `p${n}.png` })),
  )
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: account.keyHeader,
    body: uploadForm(parts, fields),
  })
  expect(res.status).toBe(201)
  return (res.body.images ?? [res.body]).map((i: { id: string }) => i.id) as string[]
}

/** Ids of the rows matching `where`, newest first, by plain SQL: the oracle of every page. */
async function expected(where: string): Promise<string[]> {
  const rows = await rawRows<{ id: string }>(
    t.server.db,
    sql.raw(`SELECT i.id FROM images i LEFT JOIN users u ON u.id = i.user_id
      WHERE ${where} AND (i.expires_at IS NULL OR i.expires_at > ${clock.now()})
      ORDER BY i.created_at DESC, ${INSERTION} DESC`),
  )
  return rows.map((r) => r.id)
}

/** Every page of a list at a few sizes against the oracle, and one past the end. */
async function expectPagesOf(path: string, headers: Record<string, string>, all: string[], direction = 'desc') {
  const order = direction === 'asc' ? all.toReversed() : all
  for (const limit of [1, 3, 7]) {
    const pages = Math.ceil(order.length / limit)
    for (let page = 1; page <= pages + 1; page++) {
      const sep = path.includes('?') ? '&' : '?'
      const res = await t.json(`${path}${sep}page=${page}&limit=${limit}`, { headers })
      expect(res.status).toBe(200)
      const totalPages = res.body.totalPages ?? res.body.pages
      expect({
        page,
        limit,
        ids: res.body.images.map((i: { id: string }) => i.id),
        total: res.body.total,
        totalPages,
      }).toEqual({
        page,
        limit,
        ids: order.slice((page - 1) * limit, page * limit),
        total: order.length,
        totalPages: pages,
      })
      expect(res.body.page).toBe(page)
    }
  }
}

beforeAll(async () => {
  t = await startTestServer({ UPLOADS_PER_HOUR: '1000' }, { now: clock.now })
  owner = await userWithKey(t)
  other = await userWithKey(t)
  const admin = await registerUser(t)
  await makeAdmin(t, admin.user.id)
  // Days apart, several a day, batches sharing one millisecond's neighbourhood, and rows the lists must leave out.
  for (const [day, files, fields, who] of [
    [0, 3, {}, owner],
    [0, 1, { visibility: 'private' }, owner],
    [1, 2, { nsfw: 'true' }, owner],
    [3, 4, {}, other],
    [3, 2, {}, owner],
    [3, 1, { expires: '3600' }, owner],
    [6, 1, {}, other],
    [9, 5, {}, owner],
    [9, 1, { expires: '7200' }, other],
    [12, 2, { visibility: 'private', nsfw: 'true' }, owner],
    [12, 3, {}, owner],
  ] as const) {
    clock.set(START + day * DAY + n * 1000)
    await upload(who, files, fields)
  }
  // Past the two expiries, with nothing swept; and one more account, banned, whose images leave the gallery.
  clock.set(START + 13 * DAY)
  const banned = await userWithKey(t)
  await upload(banned, 2)
  const ban = await t.fetch(`/api/admin/users/${banned.user.id}`, {
    method: 'PATCH',
    ...jsonBody({ banned: true }, admin.bearer),
  })
  expect(ban.status).toBe(200)
})
afterAll(async () => await t?.stop())

const GALLERY = `i.visibility = 'public' AND i.nsfw = false AND i.scan_status <> 'pending' AND (i.user_id IS NULL OR u.banned = false)`

describe('every page equals the rows cut by SQL', () => {
  test('the gallery', async () => {
    const all = await expected(GALLERY)
    expect(all.length).toBeGreaterThan(15)
    await expectPagesOf('/api/gallery', {}, all)
  })

  test('a profile', async () => {
    const all = await expected(
      `i.user_id = ${owner.user.id} AND i.visibility = 'public' AND i.scan_status <> 'pending'`,
    )
    await expectPagesOf(`/api/users/${owner.user.username}`, {}, all)
  })

  test("an owner's list, both ways, and narrowed by visibility and NSFW flag", async () => {
    const mine = `i.user_id = ${owner.user.id}`
    await expectPagesOf('/api/v1/images', owner.keyHeader, await expected(mine))
    await expectPagesOf('/api/v1/images?order=asc', owner.keyHeader, await expected(mine), 'asc')
    await expectPagesOf(
      '/api/images?visibility=private',
      owner.bearer,
      await expected(`${mine} AND i.visibility = 'private'`),
    )
    await expectPagesOf('/api/images?nsfw=true', owner.bearer, await expected(`${mine} AND i.nsfw = true`))
    await expectPagesOf(
      '/api/images?visibility=public&nsfw=false',
      owner.bearer,
      await expected(`${mine} AND i.visibility = 'public' AND i.nsfw = false`),
    )
  })
})

describe('a pinned list (asOf) while uploads land between page requests', () => {
  test('neither skips nor repeats an image, new ones and old-dated ones alike', async () => {
    const before = await expected(GALLERY)
    const first = await t.json('/api/gallery?limit=4')
    expect(first.body.images.map((i: { id: string }) => i.id)).toEqual(before.slice(0, 4))
    const asOf = first.body.asOf
    expect(Number.isInteger(asOf)).toBe(true)
    // New uploads (the newest of all), and one dated in the middle of the list (the clock set back).
    clock.set(START + 14 * DAY)
    await upload(other, 2)
    clock.set(START + 4 * DAY)
    await upload(owner, 1)
    clock.set(START + 14 * DAY)
    expect((await expected(GALLERY)).length).toBe(before.length + 3)

    const seen: string[] = first.body.images.map((i: { id: string }) => i.id)
    for (let page = 2; ; page++) {
      const res = await t.json(`/api/gallery?limit=4&page=${page}&asOf=${asOf}`)
      expect(res.body).toMatchObject({ page, total: before.length, totalPages: Math.ceil(before.length / 4), asOf })
      if (res.body.images.length === 0) break
      seen.push(...res.body.images.map((i: { id: string }) => i.id))
    }
    expect(seen).toEqual(before)
    // Unpinned, the list is the live one: the new images are in it.
    expect((await t.json('/api/gallery?limit=1')).body.total).toBe(before.length + 3)
  })

  test('asOf that is not a whole number: 400 with an error', async () => {
    for (const bad of ['-1', '1.5', 'x', '99999999999999999999']) {
      const res = await t.json(`/api/gallery?asOf=${bad}`)
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
    }
  })
})
