import { describe, expect, test } from 'bun:test'
import { createHotFiles } from '../../src/modules/cdn/hot-files'
import type { Delivery } from '../../src/modules/cdn/index'

// The in-memory copies of small files (src/modules/cdn/hot-files.ts) alone; through /cdn: answer-cache.test.ts.

const delivery = () => ({}) as Delivery
const bytesOf = (n: number, fill: number) => new Uint8Array(n).fill(fill)
/** A file body whose reads are counted. */
function countedFile(bytes: Uint8Array) {
  const reads = { count: 0 }
  const file = {
    bytes: async () => {
      reads.count++
      return bytes
    },
  } as unknown as Blob
  return { file, reads }
}
const settle = () => Bun.sleep(5)

describe('createHotFiles', () => {
  test('a loaded file is answered from memory with the same bytes; loading twice reads once', async () => {
    const hot = createHotFiles(1000, 100)
    const d = delivery()
    const { file, reads } = countedFile(bytesOf(10, 7))
    expect(hot.get(d)).toBeUndefined()
    hot.load(d, file, 10)
    hot.load(d, file, 10)
    await settle()
    expect(reads.count).toBe(1)
    expect(new Uint8Array(await hot.get(d)!.arrayBuffer())).toEqual(bytesOf(10, 7))
    expect(hot.bytes).toBe(10)
  })

  test('files above the per-file bound are left on disk', async () => {
    const hot = createHotFiles(1000, 100)
    const d = delivery()
    const { file, reads } = countedFile(bytesOf(101, 1))
    hot.load(d, file, 101)
    await settle()
    expect(reads.count).toBe(0)
    expect(hot.get(d)).toBeUndefined()
  })

  test('bounded in bytes, dropping the least recently used first', async () => {
    const hot = createHotFiles(100, 100)
    const [a, b, c] = [delivery(), delivery(), delivery()]
    hot.load(a, countedFile(bytesOf(40, 1)).file, 40)
    await settle()
    hot.load(b, countedFile(bytesOf(40, 2)).file, 40)
    await settle()
    hot.get(a) // used again: b is now the least recent
    hot.load(c, countedFile(bytesOf(40, 3)).file, 40)
    await settle()
    expect([hot.get(a) !== undefined, hot.get(b) !== undefined, hot.get(c) !== undefined]).toEqual([true, false, true])
    expect(hot.bytes).toBe(80)
    expect(hot.size).toBe(2)
  })

  test('a failed read or a length that is not the known size keeps nothing', async () => {
    const hot = createHotFiles(1000, 100)
    const failing = { bytes: async () => Promise.reject(new Error('ENOENT')) } as unknown as Blob
    const [d1, d2] = [delivery(), delivery()]
    hot.load(d1, failing, 10)
    hot.load(d2, countedFile(bytesOf(9, 1)).file, 10)
    await settle()
    expect(hot.get(d1)).toBeUndefined()
    expect(hot.get(d2)).toBeUndefined()
    expect(hot.bytes).toBe(0)
    // A later request may try again.
    hot.load(d1, countedFile(bytesOf(10, 5)).file, 10)
    await settle()
    expect(hot.get(d1)).toBeDefined()
  })
})
