/**
 * The owner's name filter (`q`) finds exactly the images whose filename contains q, ASCII letters in either case,
 * with the list's other filters, live images only, in the list's order. The oracle is the filenames filtered here in
 * JavaScript, never SQL. Rows go in straight through the database (thousands of them, so both of SQLite's plans run:
 * few matches looked up in image_names, many walked through the owner's index, and a name matching more than
 * NAME_SCOPE is counted and paged up to it), then are renamed, hidden, flagged, expired and deleted through the API,
 * as users change them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rawRows } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { images } from '../../src/db/schema'
import { NAME_SCOPE } from '../../src/modules/images/model'
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

/** Enough rows that a name on most of them is past the matches counted (NAME_SCOPE) several times over. */
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

/**
 * What the owner's list must show for q and the filters: live, matching, newest first (oldest first with `asc`), the
 * first NAME_SCOPE of them, `capped` when more match.
 */
function expected(q: string, filter: { visibility?: string; nsfw?: boolean } = {}, order: 'desc' | 'asc' = 'desc') {
  const now = Date.now()
  const matches = rows
    .filter(
      (r) =>
        folded(r.filename).includes(folded(q)) &&
        (r.expiresAt === null || r.expiresAt.getTime() > now) &&
        (filter.visibility === undefined || r.visibility === filter.visibility) &&
        (filter.nsfw === undefined || r.nsfw === filter.nsfw),
    )
    .sort((a, b) => (b.createdAt.getTime() - a.createdAt.getTime()) * (order === 'desc' ? 1 : -1))
    .map((r) => r.id)
  const ids = matches.slice(0, NAME_SCOPE)
  return { total: ids.length, ids, capped: matches.length > NAME_SCOPE }
}

async function listed(q: string, filter: Record<string, string> = {}, pages = Number.POSITIVE_INFINITY) {
  const ids: string[] = []
  let total = -1
  let capped: boolean | undefined
  for (let page = 1; page <= pages; page++) {
    const query = new URLSearchParams({ q, limit: '100', page: String(page), ...filter })
    const res = await t.json(`/api/images?${query}`, { headers: owner.bearer })
    expect(res.status).toBe(200)
    total = res.body.total
    capped = res.body.capped
    ids.push(...res.body.images.map((i: { id: string }) => i.id))
    if (page >= res.body.pages) break
  }
  return { total, ids, capped }
}

describe("the owner's name filter", () => {
  test('finds every filename holding q, ASCII letters in either case; quotes, % and _ are text; short q too', async () => {
    for (const q of ['ot-4', 'SHOT-12', 'Été à', 'à PA', '"cheese"', 'e" 1', '0%_', '%_d', 'sh', 'é', 'zzz']) {
      expect({ q, ...(await listed(q)) }).toEqual({ q, ...expected(q) })
    }
  }, 120_000)

  test('a name on thousands of images: counted and paged up to NAME_SCOPE, capped', async () => {
    // 'sh' is shorter than a trigram: SQLite walks the owner's rows for it, as PostgreSQL does for every name.
    for (const q of ['shot-', 'hot-1', 'sh']) {
      const want = expected(q)
      expect(want.capped).toBe(true)
      const first = await listed(q, {}, 3)
      expect({ q, ...first }).toEqual({ q, total: NAME_SCOPE, ids: want.ids.slice(0, 300), capped: true })
      const page = async (n: number, limit: number) =>
        await t.json(`/api/images?${new URLSearchParams({ q, limit: String(limit), page: String(n) })}`, {
          headers: owner.bearer,
        })
      // The last page ends at the cap, cut short when the cap falls inside it (70 a page); the next one is empty.
      const lastPage = Math.ceil(NAME_SCOPE / 70)
      const last = await page(lastPage, 70)
      expect(last.body.pages).toBe(lastPage)
      expect(last.body.images.map((i: { id: string }) => i.id)).toEqual(want.ids.slice((lastPage - 1) * 70))
      expect(last.body.images.length).toBeLessThan(70)
      expect((await page(lastPage + 1, 70)).body.images).toEqual([])
    }
  }, 120_000)

  test('with the visibility and NSFW filters, and in other orders', async () => {
    for (const [q, filter, narrowed] of [
      ['shot-1', { visibility: 'private' }, { visibility: 'private' }],
      ['Paris', { nsfw: 'true' }, { nsfw: true }],
      ['hot-2', { visibility: 'public', nsfw: 'false' }, { visibility: 'public', nsfw: false }],
    ] as const) {
      expect({ q, filter, ...(await listed(q, filter as Record<string, string>)) }).toEqual({
        q,
        filter,
        ...expected(q, narrowed),
      })
    }
    // Oldest first: the same images the other way round; a capped name, its oldest NAME_SCOPE.
    expect((await listed('cheese', { order: 'asc' })).ids).toEqual(expected('cheese', {}, 'asc').ids)
    expect(await listed('shot-', { order: 'asc' })).toEqual(expected('shot-', {}, 'asc'))
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
      expect({ q, ...(await listed(q, filter as Record<string, string>)) }).toEqual({ q, ...expected(q, narrowed) })
    }
  }, 120_000)

  // PostgreSQL's indexes of the filter: keys of the owner and one trigram each, which the count goes through
  // (migrations-pg/0013), and the owner and the name's trigrams in one (0011), whose estimates plan the pages; the
  // index over every owner's names gone. The Debian cluster of the tests has both extensions.
  test.skipIf(engine !== 'pg')("PostgreSQL counts a name's matches through the owner's trigram keys", async () => {
    const rows = await rawRows<{ indexname: string; indexdef: string }>(
      t.server.db,
      sql`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'images' AND indexdef LIKE '%USING gin%'
          ORDER BY indexname`,
    )
    expect(rows.map((r) => r.indexname)).toEqual(['images_name_keys', 'images_user_filename_trgm'])
    expect(rows[1]!.indexdef).toContain('USING gin (user_id, lower(filename) gin_trgm_ops)')
    const keys = async (owner: number, name: string) =>
      (
        await rawRows<{ keys: string[] }>(
          t.server.db,
          sql`SELECT image_name_keys(${owner}::integer, ${name}::text) AS keys`,
        )
      )[0]!.keys.sort()
    expect(await keys(7, 'SunSet')).toEqual(['7:nse', '7:set', '7:sun', '7:uns'])
    expect(await keys(7, 'ab')).toEqual([])
    const [plan] = await rawRows<{ 'QUERY PLAN': string }>(
      t.server.db,
      sql`EXPLAIN (FORMAT JSON) SELECT count(*) FROM images
          WHERE image_name_keys(user_id, filename) @> image_name_keys(${owner.user.id}::integer, 'shot-1'::text)`,
    )
    expect(JSON.stringify(plan)).toContain('"Index Name":"images_name_keys"')
  })
})
