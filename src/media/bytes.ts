/** Little helpers for reading binary headers; callers check bounds before reading. */

export function u16le(b: Uint8Array, at: number): number {
  return b[at]! | (b[at + 1]! << 8)
}

export function i16le(b: Uint8Array, at: number): number {
  return (u16le(b, at) << 16) >> 16
}

export function u32le(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0
}

export function i32le(b: Uint8Array, at: number): number {
  return u32le(b, at) | 0
}

export function u16be(b: Uint8Array, at: number): number {
  return (b[at]! << 8) | b[at + 1]!
}

export function u32be(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0
}

export function ascii(b: Uint8Array, at: number, length: number): string {
  return String.fromCharCode(...b.subarray(at, at + length))
}

export function startsWith(b: Uint8Array, bytes: readonly number[], at = 0): boolean {
  if (b.length < at + bytes.length) return false
  return bytes.every((x, i) => b[at + i] === x)
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
