import { describe, expect, test } from 'bun:test'
import { createLiveImageCache, type LiveImage } from '../../src/modules/images/live-cache'

// The cache alone, against a stand-in database; through the real routes: test/cdn/answer-cache.test.ts and the
// metadata tests in api.test.ts.

describe('createLiveImageCache', () => {
  /** A stand-in database: rows by id, and the change feed of its rows, keyed by rowid as SQLite's update hook tells. */
  function fakeImages(ids: string[]) {
    const row = (id: string, i: number): LiveImage => ({
      rowid: i + 1,
      id,
      ext: 'png',
      mime: 'image/png',
      frames: 1,
      filterPasses: 0,
      size: 10,
      width: 4,
      height: 3,
      views: 0,
      visibility: 'public',
      nsfw: false,
      createdAt: 0,
      expiresAt: null,
    })
    const rows = new Map(ids.map((id, i) => [id, row(id, i)]))
    const listeners: ((key: string | null) => void)[] = []
    const lookups: string[] = []
    // A copy, as a query answers: a row changed later is not the one a lookup returned.
    const service = {
      lookup: async (id: string) => {
        lookups.push(id)
        const found = rows.get(id)
        return found && { ...found }
      },
      onChange: (listener: (key: string | null) => void) => void listeners.push(listener),
      keyOf: (image: LiveImage) => String(image.rowid),
    }
    return {
      service,
      rows,
      lookups,
      change: (rowid: number | null) => {
        for (const l of listeners) l(rowid === null ? null : String(rowid))
      },
    }
  }

  test('is bounded, dropping the least recently used first', async () => {
    const ids = ['AAAAAAA1', 'AAAAAAA2', 'AAAAAAA3', 'AAAAAAA4']
    const fake = fakeImages(ids)
    const c = createLiveImageCache(fake.service, 3)
    await c.get(ids[0])
    await c.get(ids[1])
    await c.get(ids[2])
    await c.get(ids[0]) // used again: now the most recent
    await c.get(ids[3]) // evicts ids[1]
    expect(c.size).toBe(3)
    expect([ids[0], ids[1], ids[2], ids[3]].map((id) => c.has(id))).toEqual([true, false, true, true])
    // An evicted entry's row change must not touch another entry.
    fake.change(2)
    expect(c.size).toBe(3)
  })

  test('a row change drops exactly that image; the next read looks it up again', async () => {
    const ids = ['BBBBBBB1', 'BBBBBBB2']
    const fake = fakeImages(ids)
    const c = createLiveImageCache(fake.service)
    await c.get(ids[0])
    await c.get(ids[1])
    fake.rows.get(ids[0])!.size = 99
    fake.change(1)
    expect(c.has(ids[0])).toBe(false)
    expect(c.has(ids[1])).toBe(true)
    expect((await c.get(ids[0]))!.size).toBe(99)
    expect(fake.lookups).toEqual([ids[0], ids[1], ids[0]])
  })

  test('a change of any row (missed notices): every entry goes, and a lookup in flight keeps its row out', async () => {
    const ids = ['GGGGGGG1', 'GGGGGGG2']
    const fake = fakeImages(ids)
    const c = createLiveImageCache(fake.service)
    await c.get(ids[0])
    const looking = c.get(ids[1])
    fake.change(null)
    expect(c.size).toBe(0)
    await looking
    expect(c.has(ids[1])).toBe(false)
  })

  test('a hit is answered at once; a miss is one lookup however many ask meanwhile', async () => {
    const fake = fakeImages(['DDDDDDD1'])
    const c = createLiveImageCache(fake.service)
    const first = c.get('DDDDDDD1')
    const second = c.get('DDDDDDD1')
    expect(first).toBeInstanceOf(Promise)
    expect(second).toBe(first)
    const entry = await first
    expect(fake.lookups).toEqual(['DDDDDDD1'])
    expect(c.get('DDDDDDD1')).toBe(entry!)
  })

  test('a row change while a lookup is in flight: the row it read is not kept, and later reads look it up again', async () => {
    const fake = fakeImages(['EEEEEEE1'])
    const c = createLiveImageCache(fake.service)
    const before = c.get('EEEEEEE1') // the lookup reads the row as it is now
    fake.rows.get('EEEEEEE1')!.size = 99
    fake.change(1)
    // Started after the change: never the lookup in flight from before it.
    const after = c.get('EEEEEEE1')
    expect(after).not.toBe(before)
    expect((await before)!.size).toBe(10)
    expect((await after)!.size).toBe(99)
    expect(fake.lookups).toEqual(['EEEEEEE1', 'EEEEEEE1'])
    // Only the lookup started after the change was kept.
    expect((c.get('EEEEEEE1') as LiveImage).size).toBe(99)
  })

  test('a view flush while a lookup is in flight: the count it read is not kept', async () => {
    const fake = fakeImages(['FFFFFFF1'])
    const c = createLiveImageCache(fake.service)
    const looking = c.get('FFFFFFF1')
    fake.rows.get('FFFFFFF1')!.views = 5 // written by the flush, which finds no entry to add them to
    c.viewsWritten('FFFFFFF1', 5)
    expect((await looking)!.views).toBe(0)
    expect(c.has('FFFFFFF1')).toBe(false)
    expect((await c.get('FFFFFFF1'))!.views).toBe(5)
  })

  test('an expired entry is never returned: served up to the millisecond before its expiry, dropped at it', async () => {
    const fake = fakeImages(['CCCCCCC1'])
    fake.rows.get('CCCCCCC1')!.expiresAt = 1_000_000
    let now = 0
    const c = createLiveImageCache(fake.service, undefined, () => now)
    expect(await c.get('CCCCCCC1')).toBeDefined()
    fake.rows.delete('CCCCCCC1') // the real lookup hides expired rows
    now = 999_999
    expect(c.get('CCCCCCC1')).toBeDefined()
    now = 1_000_000
    expect(c.get('CCCCCCC1')).toBeUndefined()
    expect(c.has('CCCCCCC1')).toBe(false)
  })
})
