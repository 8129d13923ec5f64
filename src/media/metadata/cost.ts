import { MediaError } from '../errors'

/**
 * Work done on one file, in bytes visited (scanned, copied, filled, inflated, compressed) plus a unit per structure
 * read. The code adds to it where the work happens, so the tests can bound a file's cost by a*n+b without timing.
 */
export class Cost {
  units = 0
  add(n: number): void {
    this.units += n
  }
}

export const LOCATION_UNSAFE = 'Location data could not be removed safely from this file'

/** The refusal: location data may be present and cannot be removed with certainty. */
export function unsafe(reason: string): MediaError {
  return new MediaError(`${LOCATION_UNSAFE} (${reason})`)
}

/** `b.indexOf(byte, from)`, with the bytes it passed over counted. */
export function find(b: Uint8Array, byte: number, from: number, cost: Cost): number {
  const at = b.indexOf(byte, from)
  cost.add(Math.max(0, (at < 0 ? b.length : at + 1) - from))
  return at
}

/** The first position of `seq` at or after `from`, or -1; linear (indexOf on its first byte, then a short compare). */
export function findSeq(b: Uint8Array, seq: readonly number[], from: number, cost: Cost): number {
  for (let at = find(b, seq[0]!, from, cost); at >= 0; at = find(b, seq[0]!, at + 1, cost)) {
    let i = 1
    while (i < seq.length && b[at + i] === seq[i]) i++
    cost.add(i)
    if (i === seq.length) return at
  }
  return -1
}
