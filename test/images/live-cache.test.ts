import { describe, expect, test } from 'bun:test'
import { createLiveImageCache, type LiveImage } from '../../src/modules/images/live-cache'

// The cache alone, against a stand-in database; through the real routes: test/cdn/answer-cache.test.ts and the
// metadata tests in api.test.ts.

describe('createLiveImageCache', () => {
  /** A stand-in database: rows by id, and the row-change hook the image service drives from SQLite. */
  function fakeImages(ids: string[]) {
    const row = (id: string, i: number): LiveImage => ({
      rowid: i + 1,
      id,
      ext: 'png',
      mime: 'image/png',
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
    const listeners: ((rowid: number) => void)[] = []
    const lookups: string[] = []
    const service = {
      lookup: (id: string) => {
        lookups.push(id)
        return rows.get(id)
      },
      onRowChange: (listener: (rowid: number) => void) => void listeners.push(listener),
    }
    return {
      service,
      rows,
      lookups,
      change: (rowid: number) => {
        for (const l of listeners) l(rowid)
      },
    }
  }

  test('is bounded, dropping the least recently used first', () => {
    const ids = ['AAAAAAA1', 'AAAAAAA2', 'AAAAAAA3', 'AAAAAAA4']
    const fake = fakeImages(ids)
    const c = createLiveImageCache(fake.service, 3)
    c.get(ids[0])
    c.get(ids[1])
    c.get(ids[2])
    c.get(ids[0]) // used again: now the most recent
    c.get(ids[3]) // evicts ids[1]
    expect(c.size).toBe(3)
    expect([ids[0], ids[1], ids[2], ids[3]].map((id) => c.has(id))).toEqual([true, false, true, true])
    // An evicted entry's row change must not touch another entry.
    fake.change(2)
    expect(c.size).toBe(3)
  })

  test('a row change drops exactly that image; the next read looks it up again', () => {
    const ids = ['BBBBBBB1', 'BBBBBBB2']
    const fake = fakeImages(ids)
    const c = createLiveImageCache(fake.service)
    c.get(ids[0])
    c.get(ids[1])
    fake.rows.get(ids[0])!.size = 99
    fake.change(1)
    expect(c.has(ids[0])).toBe(false)
    expect(c.has(ids[1])).toBe(true)
    expect(c.get(ids[0])!.size).toBe(99)
    expect(fake.lookups).toEqual([ids[0], ids[1], ids[0]])
  })

  test('an expired entry is never returned: served up to the millisecond before its expiry, dropped at it', () => {
    const fake = fakeImages(['CCCCCCC1'])
    fake.rows.get('CCCCCCC1')!.expiresAt = 1_000_000
    let now = 0
    const c = createLiveImageCache(fake.service, undefined, () => now)
    expect(c.get('CCCCCCC1')).toBeDefined()
    fake.rows.delete('CCCCCCC1') // the real lookup hides expired rows
    now = 999_999
    expect(c.get('CCCCCCC1')).toBeDefined()
    now = 1_000_000
    expect(c.get('CCCCCCC1')).toBeUndefined()
    expect(c.has('CCCCCCC1')).toBe(false)
  })
})
