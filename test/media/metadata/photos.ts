import { expect } from 'bun:test'
import { join } from 'node:path'
import sharp from 'sharp'
import { pngChunk } from '../helpers'
import { buildTiff, concat, photo, type TiffField } from '../hostile-files'
import { exiftoolWrite, GPS_TAGS, run, stripAndJudge } from './containers'

// The JPEG, PNG and TIFF corpus: files written by real tools at test time (exiftool, ImageMagick's convert) and the
// crafted forms a hostile uploader sends, each built here from small pieces independently of src/media.

type Bytes = Uint8Array<ArrayBuffer>
export interface Sample {
  name: string
  format: 'jpeg' | 'png' | 'tiff'
  file: Bytes
}

/** IPTC and Photoshop fields with a place in them, and text fields, beside the Exif and XMP GPS of GPS_TAGS. */
const MORE_TAGS = [
  '-IPTC:City=London',
  '-IPTC:Province-State=Greater London',
  '-IPTC:Country-PrimaryLocationName=UK',
  '-IPTC:Sub-location=Soho',
  '-Photoshop:URL=https://example.com/home',
  '-EXIF:Make=Acme',
  '-EXIF:Model=X100',
  '-EXIF:Orientation=6',
  '-EXIF:DateTimeOriginal=2024:05:01 10:00:00',
  '-EXIF:UserComment=at home',
  '-XMP-dc:Creator=Ann',
]

/** A little-endian Exif TIFF structure whose IFD0 holds Make and a pointer to a GPS directory (51°30'26" N). */
export function gpsTiff(extra: TiffField[] = [], le = true): Bytes {
  const gps: TiffField[] = [
    [0x0001, 2, 'N'],
    [0x0002, 5, [51, 1, 30, 1, 26, 1]],
    [0x0003, 2, 'W'],
    [0x0004, 5, [0, 1, 7, 1, 39, 1]],
  ]
  return new Uint8Array(buildTiff({ ifd0: [[0x010f, 2, 'Acme'], ...extra, [0x8825, 4, { dir: 'gps' }]], gps }, { le }))
}

/** The tags of an uncompressed RGB picture in one strip, at the structure's image data (buildTiff's `data`). */
export const rgbTags = (width: number, height: number): TiffField[] => [
  [0x0100, 3, [width]],
  [0x0101, 3, [height]],
  [0x0102, 3, [8, 8, 8]],
  [0x0103, 3, [1]],
  [0x0106, 3, [2]],
  [0x0111, 4, { data: true }],
  [0x0115, 3, [3]],
  [0x0116, 3, [height]],
  [0x0117, 4, [width * height * 3]],
  [0x011c, 3, [1]],
]

/**
 * An uncompressed RGB TIFF file of random pixels in one strip, its IFD0 holding the picture's tags and `extra`;
 * `dirs` are further directories the extra fields may point at, `next` the directory after IFD0 (a second page).
 */
export function tiffFile(
  extra: TiffField[] = [],
  dirs: Record<string, TiffField[]> = {},
  { le = true, next = undefined as string | undefined, width = 12, height = 8 } = {},
): Bytes {
  const pixels = new Uint8Array(width * height * 3)
  for (let i = 0, x = 7; i < pixels.length; i++) pixels[i] = x = (x * 1103515245 + 12345) >>> 16
  const ifd0 = [...rgbTags(width, height), ...extra].sort((a, b) => a[0] - b[0])
  return new Uint8Array(buildTiff({ ifd0, ...dirs }, { le, data: pixels, next: next ? { ifd0: next } : {} }))
}

/** A Photoshop image resource block ("8BIM", id, empty name, size, data padded to even). */
export function irb(id: number, data: Uint8Array): Bytes {
  const head = Buffer.alloc(12)
  head.write('8BIM', 0, 'latin1')
  head.writeUInt16BE(id, 4)
  head.writeUInt32BE(data.length, 8)
  return new Uint8Array(concat([head, data, data.length & 1 ? [0] : []]))
}

/** Exif inside Photoshop resource 0x0422, as Photoshop stores it. */
export const exifIrb = (tiff: Uint8Array) => irb(0x0422, tiff)

/** ImageMagick's hex "raw profile" text: "\n<name>\n<length>\n<hex, 72 digits a line>\n". */
export function rawProfile(name: string, data: Uint8Array): string {
  const hex = Buffer.from(data)
    .toString('hex')
    .replace(/(.{72})/g, '$1\n')
  return `\n${name}\n${String(data.length).padStart(8)}\n${hex}\n`
}

export const tEXt = (keyword: string, text: string) => pngChunk('tEXt', concat([keyword, [0], text]))

/** The chunks of a PNG as a plain reader sees them (types and data), trailing bytes after the last one ignored. */
export function pngChunks(b: Uint8Array): { type: string; data: Uint8Array }[] {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length)
  const out = []
  for (let at = 8; at + 12 <= buf.length; at += 12 + buf.readUInt32BE(at)) {
    const length = buf.readUInt32BE(at)
    out.push({ type: buf.toString('latin1', at + 4, at + 8), data: b.subarray(at + 8, at + 8 + length) })
  }
  return out
}

/** A PNG of the given chunks (each already framed). */
export const pngOf = (chunks: Uint8Array[]): Bytes =>
  new Uint8Array(concat([[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], ...chunks]))

/** A two-frame APNG (acTL, fcTL, IDAT, fcTL, fdAT) of random pixels, from two PNGs libvips wrote. */
export async function apng(width = 16, height = 12): Promise<Bytes> {
  const frames = await Promise.all(
    [1, 2].map(async (seed) => pngChunks(await photo(width, height, seed).png().toBuffer())),
  )
  const [first, second] = frames as [ReturnType<typeof pngChunks>, ReturnType<typeof pngChunks>]
  const u32 = (...values: number[]) => {
    const b = Buffer.alloc(values.length * 4)
    for (const [i, v] of values.entries()) b.writeUInt32BE(v, i * 4)
    return b
  }
  const fcTL = (seq: number) => pngChunk('fcTL', concat([u32(seq, width, height, 0, 0), [0, 1, 0, 10, 0, 0]]))
  const idat = (f: typeof first) => f.filter((c) => c.type === 'IDAT').map((c) => c.data)
  return pngOf([
    pngChunk('IHDR', first.find((c) => c.type === 'IHDR')!.data),
    pngChunk('acTL', u32(2, 0)),
    fcTL(0),
    ...idat(first).map((d) => pngChunk('IDAT', d)),
    fcTL(1),
    ...idat(second).map((d, i) => pngChunk('fdAT', concat([u32(2 + i), d]))),
    pngChunk('IEND', new Uint8Array()),
  ])
}

/**
 * The entropy-coded data of a JPEG's first scan, read by walking its segments (stray and fill bytes passed over): SOS
 * to the EOI that ends it.
 */
export function jpegScan(b: Uint8Array): Uint8Array {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length)
  let at = 2
  while (buf[at] !== 0xff || buf[at + 1] !== 0xda) {
    at += buf[at] !== 0xff || buf[at + 1] === 0xff ? 1 : 2 + buf.readUInt16BE(at + 2)
  }
  return b.subarray(at, buf.indexOf(Buffer.from([0xff, 0xd9]), at) + 2)
}

/**
 * Files made by real tools, each with location in every group the tool writes for the format: exiftool on libvips'
 * JPEG, PNG and TIFF (Exif GPS, XMP GPS and places, IPTC places, Photoshop, PNG text), and ImageMagick's `convert`
 * of that camera JPEG to PNG (Exif as tEXt `exif:GPS*`, `xmp:GPS*`, hex raw profiles) and to TIFF.
 */
export async function toolCorpus(dir: string): Promise<Sample[]> {
  const at = (name: string) => join(dir, name)
  await Bun.write(at('camera.jpg'), await photo(48, 32).jpeg().toBuffer())
  await Bun.write(at('exiftool.png'), await photo(48, 32, 2).png().toBuffer())
  await Bun.write(at('exiftool.tif'), await photo(48, 32, 3).tiff({ compression: 'lzw' }).toBuffer())
  await Promise.all(
    ['camera.jpg', 'exiftool.tif'].map((f) => exiftoolWrite(at(f), [...GPS_TAGS, ...MORE_TAGS, '-Comment=at home'])),
  )
  await exiftoolWrite(at('exiftool.png'), [...GPS_TAGS, ...MORE_TAGS, '-PNG:Comment=at home', '-PNG:Title=Home'])
  await run(['convert', at('camera.jpg'), at('convert.png')])
  await run(['convert', at('camera.jpg'), at('convert.tif')])
  await run(['convert', at('camera.jpg'), '-quality', '90', at('convert.jpg')])
  const read = async (name: string) => new Uint8Array(await Bun.file(at(name)).arrayBuffer())
  return [
    {
      name: 'exiftool: GPS in the Exif, XMP, IPTC and Photoshop of a JPEG',
      format: 'jpeg',
      file: await read('camera.jpg'),
    },
    {
      name: 'convert photo.jpg photo.jpg (ImageMagick keeps the profiles)',
      format: 'jpeg',
      file: await read('convert.jpg'),
    },
    { name: 'exiftool: GPS in the eXIf, XMP, IPTC and text of a PNG', format: 'png', file: await read('exiftool.png') },
    {
      name: 'convert photo.jpg photo.png (tEXt exif:GPS*, xmp:GPS*, raw profiles)',
      format: 'png',
      file: await read('convert.png'),
    },
    {
      name: 'exiftool: GPS in the Exif, XMP, IPTC and Photoshop tags of a TIFF',
      format: 'tiff',
      file: await read('exiftool.tif'),
    },
    { name: 'convert photo.jpg photo.tif', format: 'tiff', file: await read('convert.tif') },
  ]
}

/** The decoded pixels, as the upload pipeline decodes (warnings are not failures). */
export const pixels = (file: Uint8Array) => sharp(file, { failOn: 'error' }).raw().toBuffer()

/**
 * Each sample stripped in both modes and judged by exiftool (stripAndJudge: no location, nothing descriptive under
 * 'all'); the pixels decode the same; an Orientation that turns or mirrors the picture survives in both modes.
 */
export async function judgePhotos(samples: Sample[], opts: { clean?: boolean } = {}) {
  const judged = []
  for (const format of new Set(samples.map((s) => s.format))) {
    const ofFormat = samples.filter((s) => s.format === format)
    for (const j of await stripAndJudge(ofFormat, format, opts)) {
      const original = ofFormat.find((s) => s.name === j.name)!.file
      if (j.changed) expect([j.name, (await pixels(j.stored)).equals(await pixels(original))]).toEqual([j.name, true])
      const turned = Number(j.before['IFD0:Orientation'] ?? 1)
      if (turned > 1) expect([j.name, j.mode, j.after['IFD0:Orientation']]).toEqual([j.name, j.mode, turned])
      judged.push({ ...j, original })
    }
  }
  return judged
}
