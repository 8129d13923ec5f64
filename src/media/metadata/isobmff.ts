import { ascii, concat, u16be, u32be } from '../bytes'
import { type Cost, unsafe } from './cost'

/** Reading and writing ISO base media boxes (HEIF: AVIF and HEIC). */

export interface Box {
  type: string
  start: number
  /** Where the payload starts (after the header) and where the box ends. */
  body: number
  end: number
}

export const malformed = (what = 'a malformed HEIF box') => unsafe(what)

/**
 * The boxes between `start` and `end`. A box that does not fit is refused inside a container (`strict`); at the top
 * level it ends the file there: what follows is trailing data, dropped. Fewer than 8 bytes left over are ignored.
 */
export function readBoxes(b: Uint8Array, start: number, end: number, strict: boolean, cost: Cost): Box[] {
  const out: Box[] = []
  let pos = start
  while (pos + 8 <= end) {
    let size = u32be(b, pos)
    let body = pos + 8
    if (size === 1) {
      if (pos + 16 > end) break
      size = readUint(b, pos + 8, 8)
      body = pos + 16
    } else if (size === 0) size = end - pos
    cost.add(body - pos)
    if (size < body - pos || pos + size > end) {
      if (strict) throw malformed()
      break
    }
    out.push({ type: ascii(b, pos + 4, 4), start: pos, body, end: pos + size })
    pos += size
  }
  return out
}

/** A big-endian unsigned integer of 0, 1, 2, 4 or 8 bytes (the field sizes of iloc, ipma, iref). */
export function readUint(b: Uint8Array, at: number, size: number): number {
  if (size === 0) return 0
  if (size === 1) return b[at]!
  if (size === 2) return u16be(b, at)
  if (size === 4) return u32be(b, at)
  if (size !== 8) throw malformed()
  const high = u32be(b, at)
  if (high >= 1 << 21) throw malformed() // past 2^53: no real file is that large
  return high * 2 ** 32 + u32be(b, at + 4)
}

/** Whether `value` can be written in a field of `size` bytes. */
export const fits = (value: number, size: number) => value >= 0 && (size >= 8 || value < 2 ** (8 * size))

/** Bytes written in order: big-endian integers of the sizes boxes use. */
export class Writer {
  private parts: number[] = []
  private blobs: Uint8Array[] = []
  uint(size: number, value: number): this {
    for (let i = size - 1; i >= 0; i--) this.parts.push(Math.floor(value / 2 ** (8 * i)) & 0xff)
    return this
  }
  fourcc(type: string): this {
    for (let i = 0; i < 4; i++) this.parts.push(type.charCodeAt(i) & 0xff)
    return this
  }
  bytes(data: Uint8Array): this {
    this.flush()
    this.blobs.push(data)
    return this
  }
  private flush() {
    if (this.parts.length > 0) this.blobs.push(new Uint8Array(this.parts))
    this.parts = []
  }
  done(): Uint8Array {
    this.flush()
    return concat(this.blobs)
  }
}

/** The header of a box of `length` payload bytes: a 32-bit size when it fits, else a 64-bit one. */
export function boxHeader(type: string, length: number): Uint8Array {
  const head = new Writer()
  if (length + 8 > 0xffffffff)
    head
      .uint(4, 1)
      .fourcc(type)
      .uint(8, length + 16)
  else head.uint(4, length + 8).fourcc(type)
  return head.done()
}

/** A box around `payload`. */
export const box = (type: string, payload: Uint8Array) => concat([boxHeader(type, payload.length), payload])

/** A full box (version and flags first). */
export const fullBox = (type: string, version: number, flags: number, payload: Uint8Array) =>
  box(type, new Writer().uint(1, version).uint(3, flags).bytes(payload).done())
