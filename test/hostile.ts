/**
 * Hostile files, generated: the attacks of issue 17 as bytes. The tests upload them and check the answers; the
 * bench's `hostile` group uploads them and prints how long /healthz waits meanwhile.
 */

/** A 1-bit BMP of `side` x `side` pixels: 1/32 of a byte per pixel on the wire, 4 bytes per pixel decoded. */
export function oneBitBmp(side: number) {
  const stride = Math.ceil(side / 32) * 4
  const pixelOffset = 14 + 40 + 8
  const b = Buffer.alloc(pixelOffset + stride * side)
  b.write('BM', 0, 'latin1')
  b.writeUInt32LE(b.length, 2)
  b.writeUInt32LE(pixelOffset, 10)
  b.writeUInt32LE(40, 14)
  b.writeInt32LE(side, 18)
  b.writeInt32LE(side, 22)
  b.writeUInt16LE(1, 26)
  b.writeUInt16LE(1, 28)
  b.writeUInt32LE(2, 46) // two palette colours: black, white
  b.set([0, 0, 0, 0, 255, 255, 255, 0], 54)
  for (let y = 0; y < side; y++) b.fill(y % 2 ? 0xaa : 0x55, pixelOffset + y * stride, pixelOffset + (y + 1) * stride)
  return b
}

/** Nested `<use>`: each level draws the one below `fanout` times, and the leaf is a blurred full-canvas rectangle. */
export function nestedUseSvg(levels: number, fanout: number, side = 2000): string {
  let defs = `<filter id="f"><feGaussianBlur stdDeviation="30"/></filter><rect id="l0" width="${side}" height="${side}" filter="url(#f)"/>`
  for (let i = 1; i <= levels; i++) defs += `<g id="l${i}">${`<use href="#l${i - 1}"/>`.repeat(fanout)}</g>`
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${side}" height="${side}"><defs>${defs}</defs><use href="#l${levels}"/></svg>`
}

export interface HostileUpload {
  name: string
  filename: string
  bytes(): Promise<Uint8Array<ArrayBuffer>> | Uint8Array<ArrayBuffer>
}

/** Every hostile file of issue 17's table, as the bench uploads them (anonymously, one at a time). */
export const HOSTILE_UPLOADS: HostileUpload[] = [
  { name: 'a 12.5 MB 1-bit 10000x10000 BMP', filename: 'big.bmp', bytes: () => oneBitBmp(10_000) },
  { name: 'a 2 KB SVG of nested <use> with a blur', filename: 'slow.svg', bytes: () => new TextEncoder().encode(nestedUseSvg(6, 10)) },
]
