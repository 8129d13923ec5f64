/**
 * The owner's name filter (`q`) finds exactly the images whose filename contains q, ASCII letters in either case,
 * with the list's other filters, live images only, in the list's order. The oracle is the filenames filtered here in
 * JavaScript, never SQL. Rows go in straight through the database (thousands of them, so both of SQLite's plans run:
 * few matches looked up in image_names, many walked through the owner's index), then are renamed, hidden, flagged,
 * expired and deleted through the API, as users change them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rawRows } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { images } from '../../src/db/schema'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

type Account = Awaited<ReturnType<typeof userWithKey>>
interface Row {
  id: string
  filename: string
  visibility: 'public' | 'private'
  nsfw: boolean
  expiresAt: Date | null
  createdAt: Date
}

let t: TestServer
let owner: Account
let other: Account
const rows: Row[] = []

/** Enough rows that a name on most of them is past the few that are looked up one by one (5,000). */
const MANY = 5200
const DAY = 86_400_000

function rowsOf(userId: number, names: string[], start: number): (Row & { userId: number })[] {
  const now = Date.now()
  return names.map((filename, i) => ({
    id: `n${String(start + i).padStart(7, '0')}`,
    userId,
    filename,
    visibility: i % 3 === 0 ? 'private' : 'public',
    nsfw: i % 7 === 0,
    // Some expired (the sweep has not removed them yet: never listed, never counted), some to expire later.
    expiresAt: i % 50 === 0 ? new Date(now - DAY) : i % 50 === 1 ? new Date(now + DAY) : null,
    createdAt: new Date(now - (names.length - i) * 60_000),
  }))
}

async function insert(list: (Row & { userId: number })[]) {
  for (let i = 0; i < list.length; i += 500)
    await t.server.db.insert(images).values(
      list.slice(i, i + 500).map((r) => ({
        ...r,
        mime: 'image/png',
        ext: 'png',
        width: 1,
        height: 1,
        size: 100,
        sha256: r.id.padEnd(64, '0'),
      })),
    )
}

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  other = await userWithKey(t)
  const names = [
    ...Array.from({ length: MANY }, (_, i) => `${i % 2 ? 'Shot' : 'SHOT'}-${i}.png`),
    ...Array.from({ length: 40 }, (_, i) => `Été à Paris ${i}.jpg`),
    ...Array.from({ length: 12 }, (_, i) => `say "cheese" ${i}.png`),
    ...Array.from({ length: 12 }, (_, i) => `100%_done ${i}.png`),
  ]
  const mine = rowsOf(owner.user.id, names, 0)
  await insert(mine)
  rows.push(...mine)
  // Another account's images never match.
  await insert(rowsOf(other.user.id, ['shot-1.png', 'Été.jpg', 'say "cheese".png', '100%_done.png'], 900_000))
}, 120_000)
afterAll(() => t.stop())

/**
 * ASCII letters lowered, as the filter compares (other letters as the engine's lower() has them, which PostgreSQL
 * folds by its locale: the queries here fold no letter but ASCII ones).
 */
const folded = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())

/** What the owner's list must show for q and the filters: live, matching, newest first. */
function expected(q: string, filter: { visibility?: string; nsfw?: boolean } = {}) {
  const now = Date.now()
  return rows
    .filter(
      (r) =>
        folded(r.filename).includes(folded(q)) &&
        (r.expiresAt === null || r.expiresAt.getTime() > now) &&
        (filter.visibility === undefined || r.visibility === filter.visibility) &&
        (filter.nsfw === undefined || r.nsfw === filter.nsfw),
    )
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
    .map((r) => r.id)
}

async function listed(q: string, filter: Record<string, string> = {}, pages = Number.POSITIVE_INFINITY) {
  const ids: string[] = []
  let total = -1
  for (let page = 1; page <= pages; page++) {
    const query = new URLSearchParams({ q, limit: '100', page: String(page), ...filter })
    const res = await t.json(`/api/images?${query}`, { headers: owner.bearer })
    expect(res.status).toBe(200)
    total = res.body.total
    ids.push(...res.body.images.map((i: { id: string }) => i.id))
    if (page >= res.body.pages) break
  }
  return { total, ids }
}

describe("the owner's name filter", () => {
  test('finds every filename holding q, ASCII letters in either case; quotes, % and _ are text; short q too', async () => {
    for (const q of ['ot-4', 'SHOT-12', 'Été à', 'à PA', '"cheese"', 'e" 1', '0%_', '%_d', 'sh', 'é', 'zzz']) {
      const want = expected(q)
      const got = await listed(q)
      expect({ q, total: got.total, ids: got.ids }).toEqual({ q, total: want.length, ids: want })
    }
  }, 120_000)

  test('a name on thousands of images: its total, its first pages and a deep one', async () => {
    for (const q of ['shot-', 'hot-1']) {
      const want = expected(q)
      expect(want.length).toBeGreaterThan(1000)
      const first = await listed(q, {}, 3)
      expect({ q, total: first.total, ids: first.ids }).toEqual({ q, total: want.length, ids: want.slice(0, 300) })
      const deep = Math.ceil(want.length / 100) - 1
      const res = await t.json(`/api/images?${new URLSearchParams({ q, limit: '100', page: String(deep) })}`, {
        headers: owner.bearer,
      })
      expect(res.body.images.map((i: { id: string }) => i.id)).toEqual(want.slice((deep - 1) * 100, deep * 100))
    }
  }, 120_000)

  test('with the visibility and NSFW filters, and in other orders', async () => {
    for (const [q, filter, narrowed] of [
      ['shot-1', { visibility: 'private' }, { visibility: 'private' }],
      ['Paris', { nsfw: 'true' }, { nsfw: true }],
      ['hot-2', { visibility: 'public', nsfw: 'false' }, { visibility: 'public', nsfw: false }],
    ] as const) {
      const want = expected(q, narrowed)
      const got = await listed(q, filter as Record<string, string>)
      expect({ q, filter, total: got.total, ids: got.ids }).toEqual({ q, filter, total: want.length, ids: want })
    }
    // Oldest first: the same images the other way round.
    const oldest = await listed('cheese', { order: 'asc' })
    expect(oldest.ids).toEqual(expected('cheese').toReversed())
  }, 120_000)

  test('follows renames, visibility and NSFW changes, expiry and deletes', async () => {
    const change = async (id: string, body: Record<string, unknown>) =>
      expect(
        (
          await t.json(`/api/images/${id}`, {
            method: 'PATCH',
            headers: { ...owner.bearer, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).status,
      ).toBe(200)
    const live = rows.filter((r) => r.expiresAt === null)
    const [renamed, hidden, flagged, expiring, deleted] = live
    await change(renamed!.id, { filename: 'Quokka Selfie.png' })
    renamed!.filename = 'Quokka Selfie.png'
    await change(hidden!.id, { visibility: hidden!.visibility === 'public' ? 'private' : 'public' })
    hidden!.visibility = hidden!.visibility === 'public' ? 'private' : 'public'
    await change(flagged!.id, { nsfw: !flagged!.nsfw })
    flagged!.nsfw = !flagged!.nsfw
    await change(expiring!.id, { expires: 1 })
    expect(
      (await t.json(`/api/images/${deleted!.id}`, { method: 'DELETE', headers: owner.bearer })).status,
    ).toBeLessThan(300)
    rows.splice(rows.indexOf(deleted!), 1)
    await Bun.sleep(1100)
    expiring!.expiresAt = new Date(Date.now() - 1)
    for (const [q, filter, narrowed] of [
      ['kka sel', {}, {}],
      [hidden!.filename, { visibility: hidden!.visibility }, { visibility: hidden!.visibility }],
      [flagged!.filename, { nsfw: String(flagged!.nsfw) }, { nsfw: flagged!.nsfw }],
      [expiring!.filename, {}, {}],
      [deleted!.filename, {}, {}],
      ['shot-', {}, {}],
    ] as const) {
      const want = expected(q, narrowed)
      const got = await listed(q, filter as Record<string, string>)
      expect({ q, total: got.total, ids: got.ids }).toEqual({ q, total: want.length, ids: want })
    }
  }, 120_000)

  // PostgreSQL's index of the filter: the owner and the name's trigrams in one (migrations-pg/0011), the index over
  // every owner's names gone. The Debian cluster of the tests has both extensions.
  test.skipIf(engine !== 'pg')('PostgreSQL looks names up in one index of the owner and the trigrams', async () => {
    const rows = await rawRows<{ indexname: string; indexdef: string }>(
      t.server.db,
      sql`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'images' AND indexdef LIKE '%gin_trgm_ops%'`,
    )
    expect(rows.map((r) => r.indexname)).toEqual(['images_user_filename_trgm'])
    expect(rows[0]!.indexdef).toContain('USING gin (user_id, lower(filename) gin_trgm_ops)')
  })
})
