/**
 * Totals read from counters (image_counts, kept by triggers: src/modules/images/counts.ts) equal a recount of the rows
 * by plain SQL, after any mix of uploads, deletes, expiry (with and without the sweep), bans, visibility and NSFW
 * changes and album moves, on days far apart; also when the writes run concurrently, and on PostgreSQL when two
 * instances write to one database. The recount is the oracle: COUNT and SUM over images, never the counters.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rawRows } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { makeImage, seededRandom, uploadForm } from '../fixtures'
import {
  jsonBody,
  makeAdmin,
  registerUser,
  startInstancePair,
  startTestServer,
  type TestClock,
  type TestServer,
  testClock,
  userWithKey,
} from '../helpers'

const DAY = 86_400_000
/** A fixed start, so the days the counts keep are the same on every run. */
const START = Date.UTC(2026, 0, 10, 12)

type Account = Awaited<ReturnType<typeof userWithKey>>

/** Room for the concurrent writes: the in-flight caps would otherwise refuse some (429), which is not under test. */
const CONCURRENT = { UPLOADS_IN_FLIGHT_PER_IP: '50', UPLOADS_IN_FLIGHT_PER_ACCOUNT: '50' }

/** One number of the database, by plain SQL (the same text on both engines). */
async function recount(t: TestServer, query: string): Promise<number> {
  const [row] = await rawRows<{ n: number | string | null }>(t.server.db, sql.raw(query))
  return Number(row?.n ?? 0)
}

const live = (now: number) => `(i.expires_at IS NULL OR i.expires_at > ${now})`

/** Every total an answer shows, against the recount of the rows at the server's `now`. */
async function expectTrueTotals(t: TestServer, accounts: Account[], admin: Account, now: number) {
  const gallery = await t.json('/api/gallery?limit=1')
  expect(gallery.body.total).toBe(
    await recount(
      t,
      `SELECT count(*) AS n FROM images i LEFT JOIN users u ON u.id = i.user_id
       WHERE i.visibility = 'public' AND i.nsfw = false AND i.scan_status <> 'pending' AND ${live(now)}
       AND (i.user_id IS NULL OR u.banned = false)`,
    ),
  )
  const listed = await t.json('/api/admin/users?limit=100', { headers: admin.bearer })
  for (const a of accounts) {
    const id = a.user.id as number
    const owned = `FROM images i WHERE i.user_id = ${id} AND ${live(now)}`
    const images = await recount(t, `SELECT count(*) AS n ${owned}`)
    const bytes = await recount(t, `SELECT coalesce(sum(i.size), 0) AS n ${owned}`)
    const banned = (await recount(t, `SELECT count(*) AS n FROM users WHERE id = ${id} AND banned = true`)) > 0
    const row = listed.body.users.find((u: { id: number }) => u.id === id)
    expect({ images: row.totalImages, bytes: row.storageUsed }).toEqual({ images, bytes })
    if (banned) continue
    const me = await t.json('/api/v1/me', { headers: a.keyHeader })
    expect({ images: me.body.totalImages, bytes: me.body.storage.used }).toEqual({ images, bytes })
    const profile = await t.json(`/api/users/${a.user.username}?limit=1`)
    expect(profile.body.total).toBe(
      await recount(t, `SELECT count(*) AS n ${owned} AND i.visibility = 'public' AND i.scan_status <> 'pending'`),
    )
    for (const visibility of [undefined, 'public', 'private'])
      for (const nsfw of [undefined, true, false]) {
        const query = new URLSearchParams({ limit: '1' })
        let where = ''
        if (visibility) {
          query.set('visibility', visibility)
          where += ` AND i.visibility = '${visibility}'`
        }
        if (nsfw !== undefined) {
          query.set('nsfw', String(nsfw))
          where += ` AND i.nsfw = ${nsfw}`
        }
        const own = await t.json(`/api/images?${query}`, { headers: a.bearer })
        expect({ filter: query.toString(), total: own.body.total }).toEqual({
          filter: query.toString(),
          total: await recount(t, `SELECT count(*) AS n ${owned}${where}`),
        })
      }
  }
  // Albums: what their owner sees, and what anyone else sees of a public one (public images only).
  for (const a of accounts) {
    const owner = await t.json('/api/albums', { headers: a.bearer })
    if (owner.status !== 200) continue // a banned owner
    for (const album of owner.body.albums) {
      const members = `FROM album_images ai JOIN images i ON i.id = ai.image_id WHERE ai.album_id = '${album.id}' AND ${live(now)}`
      expect({ album: album.id, n: album.imageCount }).toEqual({
        album: album.id,
        n: await recount(t, `SELECT count(*) AS n ${members}`),
      })
      if (!album.isPublic) continue
      const seen = await t.json(`/api/albums/${album.id}`)
      expect({ album: album.id, n: seen.body.album.imageCount }).toEqual({
        album: album.id,
        n: await recount(t, `SELECT count(*) AS n ${members} AND i.visibility = 'public'`),
      })
    }
  }
  // The counters themselves, row by row, against a recount grouped as they are.
  const groups = await rawRows<Record<string, number | string>>(
    t.server.db,
    sql.raw(`SELECT CASE WHEN e.everyone = 1 THEN -1 ELSE coalesce(i.user_id, 0) END AS owner_id,
       i.created_at / ${DAY} AS day, count(*) AS images, sum(i.size) AS bytes,
       sum(CASE WHEN i.visibility = 'public' THEN 1 ELSE 0 END) AS public,
       sum(CASE WHEN i.visibility = 'public' AND i.nsfw = false AND i.scan_status <> 'pending' THEN 1 ELSE 0 END) AS listed
     FROM images i, (SELECT 0 AS everyone UNION ALL SELECT 1) AS e GROUP BY 1, 2 ORDER BY 1, 2`),
  )
  const kept = await rawRows<Record<string, number | string>>(
    t.server.db,
    sql.raw('SELECT owner_id, day, images, bytes, public, listed FROM image_counts WHERE images <> 0 ORDER BY 1, 2'),
  )
  const numbers = (rows: Record<string, number | string>[]) =>
    rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)])))
  expect(numbers(kept)).toEqual(numbers(groups))
}

/** The operations the mix draws from, each through the API (or the sweeper), on the server's clock. */
function operations(t: TestServer, clock: TestClock, accounts: Account[], admin: Account, seed: number) {
  const random = seededRandom(seed)
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!
  const owned = new Map<string, Account>()
  const albums: { id: string; owner: Account }[] = []
  let n = 0
  let now = START
  clock.set(now)
  const someImage = () => (owned.size ? pick([...owned.keys()]) : null)

  return {
    now: () => now,
    async upload(on: TestServer = t) {
      const account = pick(accounts)
      const fields: Record<string, string> = {}
      if (random() < 0.3) fields.visibility = 'private'
      if (random() < 0.2) fields.nsfw = 'true'
      if (random() < 0.25) fields.expires = String(1 + Math.floor(random() * 3) * 3600)
      const files = [{ bytes: await makeImage('png', 8 + (n++ % 5), 8, n), name: `mix ${n}.png` }]
      if (random() < 0.3) files.push({ bytes: await makeImage('png', 9, 9, n + 1000), name: `pair ${n}.png` })
      const res = await on.json('/api/v1/upload', {
        method: 'POST',
        headers: account.keyHeader,
        body: uploadForm(files, fields),
      })
      expect(res.status).toBe(201)
      for (const image of res.body.images ?? [res.body]) owned.set(image.id, account)
    },
    async remove(on: TestServer = t) {
      const id = someImage()
      if (!id) return
      const res = await on.fetch(`/api/v1/image/${id}`, { method: 'DELETE', headers: owned.get(id)!.keyHeader })
      // Already gone through another door (expiry and its sweep, a concurrent delete): 404.
      expect([200, 404]).toContain(res.status)
      owned.delete(id)
    },
    async patch(on: TestServer = t) {
      const id = someImage()
      if (!id) return
      const change = pick([
        { visibility: pick(['public', 'private']) },
        { nsfw: random() < 0.5 },
        { expires: pick([3600, 7200, null]) },
      ])
      const res = await on.fetch(`/api/v1/image/${id}`, {
        method: 'PATCH',
        ...jsonBody(change, owned.get(id)!.keyHeader),
      })
      expect([200, 404]).toContain(res.status)
    },
    /** Time moves: to another day (uploads land there), or past some expiries (no write at all). */
    travel() {
      now += pick([0.5 * 3600_000, 2 * 3600_000, DAY, 3 * DAY])
      clock.set(now)
    },
    async sweep() {
      await t.server.services.images.sweepExpired()
    },
    async ban() {
      const account = pick(accounts)
      const banned = random() < 0.5
      const res = await t.fetch(`/api/admin/users/${account.user.id}`, {
        method: 'PATCH',
        ...jsonBody({ banned }, admin.bearer),
      })
      expect(res.status).toBe(200)
    },
    async albumMove(on: TestServer = t) {
      const id = someImage()
      if (!id) return
      const owner = owned.get(id)!
      let album = albums.find((a) => a.owner === owner)
      if (!album || random() < 0.2) {
        const made = await on.json('/api/albums', {
          method: 'POST',
          ...jsonBody({ title: `album ${n++}`, isPublic: random() < 0.5 }, owner.bearer),
        })
        album = { id: made.body.album.id, owner }
        albums.push(album)
      }
      const add = random() < 0.7
      const res = add
        ? await on.fetch(`/api/albums/${album.id}/images`, {
            method: 'POST',
            ...jsonBody({ imageId: id }, owner.bearer),
          })
        : await on.fetch(`/api/albums/${album.id}/images/${id}`, { method: 'DELETE', headers: owner.bearer })
      expect([200, 404]).toContain(res.status)
    },
  }
}

type Ops = ReturnType<typeof operations>
const MIX: (keyof Ops)[] = [
  'upload',
  'upload',
  'upload',
  'remove',
  'patch',
  'patch',
  'travel',
  'sweep',
  'ban',
  'albumMove',
]

/** Accounts of one server: three with keys (the owners) and an admin (bans, the admin list). */
async function accountsOf(t: TestServer) {
  const accounts = [await userWithKey(t), await userWithKey(t), await userWithKey(t)]
  const admin = await registerUser(t)
  await makeAdmin(t, admin.user.id)
  return { accounts, admin: admin as Account }
}

describe('counters equal a recount', () => {
  let t: TestServer
  const clock = testClock(START)
  let accounts: Account[]
  let admin: Account

  beforeAll(async () => {
    t = await startTestServer(CONCURRENT, { now: clock.now })
    ;({ accounts, admin } = await accountsOf(t))
  })
  afterAll(async () => await t?.stop())

  for (const seed of [1, 2]) {
    test(`after a mix of uploads, deletes, expiry, sweeps, bans, visibility, NSFW and album changes (seed ${seed})`, async () => {
      const ops = operations(t, clock, accounts, admin, seed)
      const random = seededRandom(seed * 7)
      for (let step = 0; step < 36; step++) {
        const op = MIX[Math.floor(random() * MIX.length)]!
        await (ops[op] as () => Promise<void> | void)()
        if (step % 6 === 5) await expectTrueTotals(t, accounts, admin, ops.now())
      }
      // And at a time past every expiry, before the sweep has removed a single row.
      clock.set(ops.now() + 10 * DAY)
      await expectTrueTotals(t, accounts, admin, ops.now() + 10 * DAY)
    })
  }

  test('when writes run concurrently', async () => {
    const ops = operations(t, clock, accounts, admin, 3)
    for (let i = 0; i < 6; i++) await ops.upload()
    await Promise.all([
      ...Array.from({ length: 6 }, () => ops.upload()),
      ops.remove(),
      ops.remove(),
      ops.patch(),
      ops.patch(),
      ops.patch(),
      ops.albumMove(),
      ops.ban(),
    ])
    await expectTrueTotals(t, accounts, admin, ops.now())
  })
})

describe.skipIf(engine !== 'pg')('counters across two instances on one PostgreSQL database', () => {
  let instances: Awaited<ReturnType<typeof startInstancePair>>
  const clock = testClock(START)

  beforeAll(async () => {
    instances = await startInstancePair(CONCURRENT, { now: clock.now })
  })
  afterAll(async () => await instances?.stop())

  test('writes through both at once keep one true count', async () => {
    const [a, b] = instances.pair
    const { accounts, admin } = await accountsOf(a)
    const ops = operations(a, clock, accounts, admin, 4)
    for (let i = 0; i < 4; i++) await ops.upload(i % 2 ? a : b)
    await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => ops.upload(i % 2 ? a : b)),
      ops.patch(a),
      ops.patch(b),
      ops.remove(a),
      ops.remove(b),
      ops.albumMove(b),
    ])
    await expectTrueTotals(a, accounts, admin, ops.now())
    await expectTrueTotals(b, accounts, admin, ops.now())
  })
})
