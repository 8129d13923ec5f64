import { describe, expect, test } from 'bun:test'
import { hammingDistance, perceptualHash } from '../../src/media/phash'
import { createHashIndex } from '../../src/modules/blocks/matcher'

/** Seeded 64-bit hashes, and a hash with `bits` of them flipped. */
function randomHashes(count: number, seed: number) {
  let a = seed
  const next = () => {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0
    return a
  }
  return Array.from(
    { length: count },
    () => next().toString(16).padStart(8, '0') + next().toString(16).padStart(8, '0'),
  )
}
function flip(hex: string, bits: number[]) {
  let big = BigInt(`0x${hex}`)
  for (const bit of bits) big ^= 1n << BigInt(bit)
  return big.toString(16).padStart(16, '0')
}

describe('multi-index hashing', () => {
  test('finds exactly what a full scan finds, at every distance up to the threshold and none past it', () => {
    for (const maxDistance of [0, 3, 4, 10, 16]) {
      const hashes = randomHashes(400, maxDistance + 1)
      const index = createHashIndex(maxDistance)
      for (const [id, h] of hashes.entries()) index.add(id, h)
      const queries = [
        ...hashes.slice(0, 50).map((h, i) => flip(h, [i % 64, (i * 7 + 3) % 64, (i * 13 + 5) % 64].slice(0, i % 4))),
        // Spread over every block: the pigeonhole case, where no block matches exactly.
        ...hashes.slice(50, 100).map((h, i) =>
          flip(
            h,
            Array.from({ length: maxDistance }, (_, k) => (k * 16 + i) % 64),
          ),
        ),
        ...hashes.slice(100, 150).map((h, i) =>
          flip(
            h,
            Array.from({ length: maxDistance + 1 }, (_, k) => (k * 5 + i) % 64),
          ),
        ),
        ...randomHashes(100, 999),
      ]
      const got = queries.map((q) => index.nearest(q)?.distance ?? 'none')
      const scanned = queries.map((q) => {
        const best = Math.min(...hashes.map((h) => hammingDistance(q, h)))
        return best <= maxDistance ? best : 'none'
      })
      expect(got).toEqual(scanned)
      // Each kind of query, found or not, is in there.
      if (maxDistance > 0) expect(new Set(got).size).toBeGreaterThan(2)
    }
  })

  test('a removed hash is no longer found', () => {
    const index = createHashIndex(10)
    index.add(1, 'ffff0000ffff0000')
    index.add(2, 'ffff0000ffff00ff')
    expect(index.nearest('ffff0000ffff0001')?.id).toBe(1)
    index.remove(1)
    expect(index.nearest('ffff0000ffff0001')?.id).toBe(2)
    index.remove(2)
    expect([index.nearest('ffff0000ffff0001'), index.size]).toEqual([null, 0])
  })
})

describe('the hash', () => {
  test('a flat or structureless picture has none; a shaped one has 16 hex digits', () => {
    expect(perceptualHash(new Uint8Array(32 * 32).fill(128))).toBeNull()
    // A disc: shape in both directions (a picture that changes along one axis only has none in the frequencies read).
    const shaped = new Uint8Array(32 * 32).map((_, i) => (((i % 32) - 12) ** 2 + ((i >> 5) - 14) ** 2 < 64 ? 230 : 30))
    expect(perceptualHash(shaped)).toMatch(/^[0-9a-f]{16}$/)
  })
})
