import { hashHalves, popcount32 } from '../../media/phash'

/** The largest distance the index answers for: 4 bits a block, so at most 2,517 probes a block (C(16, <=4)). */
export const MAX_MATCH_DISTANCE = 16

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
  const masks = flipMasks(Math.floor(maxDistance / 4))
  const his: number[] = []
  const los: number[] = []
  /** The entry's id per slot; -1 once removed (its slot stays in the tables, skipped). */
  const ids: number[] = []
  const slotOf = new Map<number, number>()
  const tables = [0, 1, 2, 3].map(() => new Map<number, number[]>())

  return {
    add(id: number, hex: string) {
      if (slotOf.has(id)) return
      const [hi, lo] = hashHalves(hex)
      const slot = ids.length
      his.push(hi)
      los.push(lo)
      ids.push(id)
      slotOf.set(id, slot)
      blocksOf(hi, lo).forEach((key, b) => {
        const bucket = tables[b]!.get(key)
        if (bucket) bucket.push(slot)
        else tables[b]!.set(key, [slot])
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
      let best: { id: number; distance: number } | null = null
      const keys = blocksOf(hi, lo)
      for (let b = 0; b < 4; b++) {
        const table = tables[b]!
        for (const mask of masks) {
          const bucket = table.get(keys[b]! ^ mask)
          if (!bucket) continue
          for (const slot of bucket) {
            const id = ids[slot]!
            if (id < 0) continue
            const distance = popcount32(his[slot]! ^ hi) + popcount32(los[slot]! ^ lo)
            if (distance <= maxDistance && (best === null || distance < best.distance)) {
              best = { id, distance }
              if (distance === 0) return best
            }
          }
        }
      }
      return best
    },

    get size() {
      return slotOf.size
    },
  }
}
