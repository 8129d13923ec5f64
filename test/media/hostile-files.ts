import { deflateSync } from 'node:zlib'
import sharp from 'sharp'
import { pngChunk } from './helpers'

/** Files an attacker (or a careless writer) sends, built here from small real images: no binary fixtures. */

export const GPS = {
  GPSLatitudeRef: 'N',
  GPSLatitude: '51/1 30/1 26/1',
  GPSLongitudeRef: 'W',
  GPSLongitude: '0/1 7/1 39/1',
}
export const XMP_WITH_GPS =
  '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
  '<rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/" exif:GPSLatitude="51,30.43N" dc:format="image/jpeg">' +
  '<exif:GPSLongitude>0,7.65W</exif:GPSLongitude><dc:creator>Ann</dc:creator></rdf:Description></rdf:RDF></x:xmpmeta>'

export const bytes = (s: string) => new TextEncoder().encode(s)

export function concat(parts: (Uint8Array | number[] | string)[]): Uint8Array {
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))))
}

/** A small photo-like image: random pixels, so any change to decoded pixels shows. */
export function photo(width = 24, height = 16, seed = 1) {
  const px = Buffer.alloc(width * height * 3)
  for (let i = 0, x = seed; i < px.length; i++) px[i] = x = (x * 1103515245 + 12345) >>> 16
  return sharp(px, { raw: { width, height, channels: 3 } })
}

/** The chunks given, inserted before a PNG's IEND. */
export function withPngChunks(png: Uint8Array, chunks: Uint8Array[]): Uint8Array {
  const iend = png.length - 12
  return concat([png.subarray(0, iend), ...chunks, png.subarray(iend)])
}

/** The segments given (marker, payload), inserted right after a JPEG's SOI. */
export function withJpegSegments(jpeg: Uint8Array, segments: [number, Uint8Array][]): Uint8Array {
  const encoded = segments.map(([marker, payload]) =>
    concat([[0xff, marker, (payload.length + 2) >> 8, (payload.length + 2) & 0xff], payload]),
  )
  return concat([jpeg.subarray(0, 2), ...encoded, jpeg.subarray(2)])
}

export const zTXt = (keyword: string, text: Uint8Array) =>
  pngChunk('zTXt', concat([keyword, [0, 0], deflateSync(text, { level: 9 })]))
export const xmpApp1 = (xmp: Uint8Array): [number, Uint8Array] => [
  0xe1,
  concat(['http://ns.adobe.com/xap/1.0/\0', xmp]),
]

/**
 * A little-endian TIFF structure: IFD0 at 8 with the given entries (tag, type, count, value or offset), then
 * directories and data placed by the caller at fixed offsets, zero-filled to `size`.
 */
export function tiffStructure(
  size: number,
  dirs: { at: number; entries: [number, number, number, number][]; next?: number }[],
): Uint8Array {
  const t = Buffer.alloc(size)
  t.write('II', 0, 'latin1')
  t.writeUInt16LE(42, 2)
  t.writeUInt32LE(dirs[0]!.at, 4)
  for (const { at, entries, next = 0 } of dirs) {
    t.writeUInt16LE(entries.length, at)
    entries.forEach(([tag, type, count, value], i) => {
      const e = at + 2 + i * 12
      if (e + 12 > size) return
      t.writeUInt16LE(tag, e)
      t.writeUInt16LE(type, e + 2)
      t.writeUInt32LE(count, e + 4)
      t.writeUInt32LE(value, e + 8)
    })
    if (at + 2 + entries.length * 12 + 4 <= size) t.writeUInt32LE(next, at + 2 + entries.length * 12)
  }
  return t
}

export const tinyPng = async () => new Uint8Array(await photo(8, 8).png().toBuffer())

/** Row 1 of the issue: a small PNG whose zTXt XMP inflates to `size` bytes of `<a:GPS>` repeated. */
export async function xmpBombPng(size = 196 * 1024): Promise<Uint8Array> {
  return withPngChunks(await tinyPng(), [zTXt('XML:com.adobe.xmp', bytes('<a:GPS>'.repeat(Math.ceil(size / 7))))])
}

/** Row 2: a PNG whose eXIf GPS directory has `entries` entries, each claiming the rest of a `size`-byte block. */
export async function gpsEntriesPng(entries = 10_000, size = 6 << 20): Promise<Uint8Array> {
  return withPngChunks(await tinyPng(), [pngChunk('eXIf', gpsEntriesTiff(entries, size))])
}

export function gpsEntriesTiff(entries: number, size: number): Uint8Array {
  const gps = 26
  const values = gps + 2 + entries * 12 + 4
  return tiffStructure(size, [
    { at: 8, entries: [[0x8825, 4, 1, gps]] },
    {
      at: gps,
      entries: Array.from({ length: entries }, (_, i): [number, number, number, number] => [
        i & 0xffff,
        7,
        size - values,
        values,
      ]),
    },
  ])
}

/** Row 3: a JPEG with GPS in its Exif and one stray 00 byte between two markers (after the first segment). */
export async function strayZeroJpeg(): Promise<Uint8Array> {
  const jpeg = Buffer.from(
    await photo(64, 48)
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
      .toBuffer(),
  )
  const second = 4 + jpeg.readUInt16BE(4)
  return concat([jpeg.subarray(0, second), [0], jpeg.subarray(second)])
}

/** 51/1, the latitude's degrees as an Exif RATIONAL in either byte order: in the file only while its GPS is. */
export function hasLatitudeBytes(b: Uint8Array): boolean {
  const buf = Buffer.from(b)
  return buf.includes(Buffer.from([0, 0, 0, 51, 0, 0, 0, 1])) || buf.includes(Buffer.from([51, 0, 0, 0, 1, 0, 0, 0]))
}

/** Row 3 of the first table: a 1-bit BMP of `side` x `side` pixels, 1/32 of a byte per pixel on the wire, 4 decoded. */
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

/** Row 4: nested `<use>`: each level draws the one below `fanout` times, and the leaf is a blurred full-canvas rectangle. */
export function nestedUseSvg(levels: number, fanout: number, side = 2000): string {
  let defs = `<filter id="f"><feGaussianBlur stdDeviation="30"/></filter><rect id="l0" width="${side}" height="${side}" filter="url(#f)"/>`
  for (let i = 1; i <= levels; i++) defs += `<g id="l${i}">${`<use href="#l${i - 1}"/>`.repeat(fanout)}</g>`
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${side}" height="${side}"><defs>${defs}</defs><use href="#l${levels}"/></svg>`
}

/**
 * A field of `buildTiff`: tag, type, and its value (text, numbers of the type, raw bytes, another directory, or the
 * offset of the image data).
 */
export type TiffField = [number, number, string | number[] | Uint8Array | { dir: string } | { data: true }]

/**
 * A TIFF structure laid out like a writer would: the header, then each directory (in the order given, the first is
 * IFD0) followed by its values, then `data` (a TIFF file's pixels). Pointers name another directory; `next` links a
 * directory to the one after it.
 */
export function buildTiff(
  dirs: Record<string, TiffField[]>,
  { le = true, magic = 42, next = {} as Record<string, string>, data = new Uint8Array() } = {},
): Uint8Array {
  const sizes = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4]
  const valueBytes = (type: number, v: TiffField[2]): Buffer => {
    if (typeof v === 'string') return Buffer.from(type === 2 ? `${v}\0` : v, 'latin1')
    if (v instanceof Uint8Array) return Buffer.from(v)
    if (!Array.isArray(v)) return Buffer.alloc(4) // a pointer, filled in below
    const size = type === 5 || type === 10 ? 4 : sizes[type]!
    const out = Buffer.alloc(v.length * size)
    v.forEach((n, i) => {
      if (size === 1) out.writeUInt8(n & 0xff, i)
      else if (size === 2) le ? out.writeUInt16LE(n, i * 2) : out.writeUInt16BE(n, i * 2)
      else le ? out.writeUInt32LE(n >>> 0, i * 4) : out.writeUInt32BE(n >>> 0, i * 4)
    })
    return out
  }
  const names = Object.keys(dirs)
  const at: Record<string, number> = {}
  let pos = 8
  for (const name of names) {
    at[name] = pos
    pos += 2 + dirs[name]!.length * 12 + 4
    for (const [, type, v] of dirs[name]!) {
      const n = valueBytes(type, v).length
      if (n > 4) pos += n + (n & 1)
    }
  }
  const dataAt = pos
  const t = Buffer.alloc(pos + data.length)
  t.set(data, dataAt)
  const u16 = (v: number, o: number) => (le ? t.writeUInt16LE(v, o) : t.writeUInt16BE(v, o))
  const u32 = (v: number, o: number) => (le ? t.writeUInt32LE(v >>> 0, o) : t.writeUInt32BE(v >>> 0, o))
  t.write(le ? 'II' : 'MM', 0, 'latin1')
  u16(magic, 2)
  u32(8, 4)
  for (const name of names) {
    const fields = dirs[name]!
    let values = at[name]! + 2 + fields.length * 12 + 4
    u16(fields.length, at[name]!)
    fields.forEach(([tag, type, v], i) => {
      const e = at[name]! + 2 + i * 12
      const bytes = valueBytes(type, v)
      u16(tag, e)
      u16(type, e + 2)
      const unit = type === 5 || type === 10 ? 8 : sizes[type]! || 1
      const pointer = typeof v === 'object' && ('dir' in v || 'data' in v)
      u32(pointer ? 1 : Math.ceil(bytes.length / unit), e + 4)
      if (pointer) u32('dir' in v ? at[v.dir]! : dataAt, e + 8)
      else if (bytes.length <= 4) t.set(bytes, e + 8)
      else {
        u32(values, e + 8)
        t.set(bytes, values)
        values += bytes.length + (bytes.length & 1)
      }
    })
    u32(next[name] ? at[next[name]]! : 0, at[name]! + 2 + fields.length * 12)
  }
  return t
}
