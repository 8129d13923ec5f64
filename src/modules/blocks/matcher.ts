import { MAX_MATCH_DISTANCE } from '../../config'
import { hashHalves, popcount32 } from '../../media/phash'

/** Every 16-bit value with at most `radius` bits set: what is XORed onto a block to probe its neighbours. */
function flipMasks(radius: number): number[] {
  const masks: number[] = []
  for (let m = 0; m < 1 << 16; m++) if (popcount32(m) <= radius) masks.push(m)
  return masks
}

const blocksOf = (hi: number, lo: number) => [hi >>> 16, hi & 0xffff, lo >>> 16, lo & 0xffff]

/**
 * 64-bit hashes in memory, found within `maxDistance` bits of a query by multi-index hashing: each hash is filed under
 * its four 16-bit blocks. Two hashes within d bits agree within floor(d / 4) bits on at least one block (pigeonhole),
 * so probing each block's values within that radius finds every candidate, and only those are compared in full.
 */
export function createHashIndex(maxDistance: number) {
  if (!Number.isInteger(maxDistance) || maxDistance < 0 || maxDistance > MAX_MATCH_DISTANCE)
    throw new Error(`maxDistance must be 0-${MAX_MATCH_DISTANCE}`)
  const masks = Int32Array.from(flipMasks(Math.floor(maxDistance / 4)))
  // Typed arrays, no object per entry: 100,000 hashes are a few MB the garbage collector never walks.
  let capacity = 1024
  let count = 0
  let his = new Uint32Array(capacity)
  let los = new Uint32Array(capacity)
  /** The entry's id per slot; -1 once removed (its slot stays in the chains, skipped). */
  let ids = new Float64Array(capacity)
  /** Per block: the last slot filed under each 16-bit value, and each slot's previous one under the same value. */
  const heads = [0, 1, 2, 3].map(() => new Int32Array(1 << 16).fill(-1))
  let chains = [0, 1, 2, 3].map(() => new Int32Array(capacity))
  const slotOf = new Map<number, number>()

  function grow() {
    capacity *= 2
    const larger = <T extends Uint32Array | Float64Array | Int32Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(capacity)
      b.set(a)
      return b
    }
    his = larger(his)
    los = larger(los)
    ids = larger(ids)
    chains = chains.map(larger)
  }

  return {
    add(id: number, hex: string) {
      if (slotOf.has(id)) return
      if (count === capacity) grow()
      const [hi, lo] = hashHalves(hex)
      const slot = count++
      his[slot] = hi
      los[slot] = lo
      ids[slot] = id
      slotOf.set(id, slot)
      blocksOf(hi, lo).forEach((key, b) => {
        chains[b]![slot] = heads[b]![key]!
        heads[b]![key] = slot
      })
    },

    remove(id: number) {
      const slot = slotOf.get(id)
      if (slot === undefined) return
      ids[slot] = -1
      slotOf.delete(id)
    },

    /** The closest entry within maxDistance of `hex`, or null. */
    nearest(hex: string): { id: number; distance: number } | null {
      const [hi, lo] = hashHalves(hex)
      let bestSlot = -1
      let best = maxDistance + 1
      const keys = blocksOf(hi, lo)
      for (let b = 0; b < 4; b++) {
        const head = heads[b]!
        const chain = chains[b]!
        const key = keys[b]!
        for (let m = 0; m < masks.length; m++) {
          for (let slot = head[key ^ masks[m]!]!; slot >= 0; slot = chain[slot]!) {
            if (ids[slot]! < 0) continue
            const distance = popcount32(his[slot]! ^ hi) + popcount32(los[slot]! ^ lo)
            if (distance < best) {
              best = distance
              bestSlot = slot
              if (distance === 0) return { id: ids[slot]!, distance }
            }
          }
        }
      }
      return bestSlot < 0 ? null : { id: ids[bestSlot]!, distance: best }
    },

    get size() {
      return slotOf.size
    },
  }
}
