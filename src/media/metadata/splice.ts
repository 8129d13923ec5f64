import type { Cost } from './cost'

/**
 * A file put together from ranges of the original and new bytes. Ranges that follow each other in the original are
 * merged as they come, so what stays of a file is copied in a few large pieces (a part per element or block cost a
 * typed-array view each: most of the time of a large SVG), and a file that keeps everything is seen as unchanged
 * without comparing it.
 */
export class Splice {
  private parts: (Uint8Array | [number, number])[] = []
  private from = -1
  private to = -1
  length = 0

  constructor(private readonly source: Uint8Array) {}

  /** Bytes [start, end) of the original, next. */
  copy(start: number, end: number): void {
    if (start >= end) return
    this.length += end - start
    if (start === this.to) {
      this.to = end
      return
    }
    this.flush()
    this.from = start
    this.to = end
  }

  /** New bytes, next. */
  add(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    this.flush()
    this.parts.push(bytes)
    this.length += bytes.length
  }

  private flush() {
    if (this.from >= 0) this.parts.push([this.from, this.to])
    this.from = -1
    this.to = -1
  }

  /** The bytes put together, or null when they are the original's, unchanged. */
  result(cost: Cost): Uint8Array | null {
    this.flush()
    const whole = this.parts[0]
    if (this.parts.length === 1 && Array.isArray(whole) && whole[0] === 0 && whole[1] === this.source.length)
      return null
    const out = new Uint8Array(this.length)
    let at = 0
    for (const part of this.parts) {
      const bytes = Array.isArray(part) ? this.source.subarray(part[0], part[1]) : part
      out.set(bytes, at)
      at += bytes.length
    }
    cost.add(out.length)
    const { buffer, byteOffset, length } = this.source
    const same = out.length === length && Buffer.from(out.buffer).equals(Buffer.from(buffer, byteOffset, length))
    return same ? null : out
  }
}
