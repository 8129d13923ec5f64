import { afterAll, beforeAll, expect } from 'bun:test'
import { Cost, LOCATION_UNSAFE, stripBytes } from '../../../src/media/exif'
import type { ImageFormat } from '../../../src/media/formats'
import { locationTags, metadataTags, readTagsOf, type Tags } from '../exiftool'
import { scratchDir } from '../helpers'
import { concat } from '../hostile-files'

// Helpers of the WebP, GIF, SVG and HEIF tests: the real tools that write their corpus, container pieces built here
// (independently of src/media: their own little writers and readers), and the strip-and-judge loop.

export type Mode = 'gps' | 'all'
export type Bytes = Uint8Array<ArrayBuffer>

export const readBytes = async (path: string): Promise<Bytes> => new Uint8Array(await Bun.file(path).arrayBuffer())

/** A scratch directory made before the calling file's tests and removed after them: `scratch()` inside a test. */
export function testScratch(): () => Awaited<ReturnType<typeof scratchDir>> {
  let dir: Awaited<ReturnType<typeof scratchDir>>
  beforeAll(async () => {
    dir = await scratchDir()
  })
  afterAll(() => dir.cleanup())
  return () => dir
}

/** Runs a tool, failing the test with its error output when it fails. */
export async function run(cmd: string[]): Promise<string> {
  const proc = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  if ((await proc.exited) !== 0) throw new Error(`${cmd.join(' ')} failed: ${err}`)
  return out
}

/** exiftool writes these tags into the file in place (GPS into every group it can write for the format). */
export const exiftoolWrite = (path: string, tags: string[]) =>
  run(['exiftool', '-q', '-q', '-overwrite_original', '-n', ...tags, path])

/** Location in Exif (the GPS directory) and in XMP (exif:GPS*, photoshop:City, Iptc4xmpCore:Location). */
export const GPS_TAGS = [
  '-EXIF:GPSLatitude=51.5',
  '-EXIF:GPSLatitudeRef=N',
  '-EXIF:GPSLongitude=0.12',
  '-EXIF:GPSLongitudeRef=W',
  '-EXIF:GPSAltitude=30',
  '-XMP-exif:GPSLatitude=51.5',
  '-XMP-exif:GPSLongitude=-0.12',
  '-XMP-photoshop:City=London',
  '-XMP-iptcCore:Location=Home',
]

export const CAMERA_TAGS = ['-EXIF:Make=Acme', '-EXIF:Model=X100', '-EXIF:Orientation=6', '-XMP-dc:Creator=Ann']

/** The stripper on a copy: what would be stored (`out` null: the file as sent), or the refusal's message. */
export function strip(file: Uint8Array, format: ImageFormat, mode: Mode) {
  const cost = new Cost()
  try {
    const out = stripBytes(file.slice(), format, mode, cost)
    return { out, stored: out ?? file, cost: cost.units, refusal: null }
  } catch (err) {
    expect((err as Error).message).toStartWith(LOCATION_UNSAFE)
    return { out: null, stored: file, cost: cost.units, refusal: (err as Error).message }
  }
}

export function refusal(file: Uint8Array, format: ImageFormat, mode: Mode = 'gps'): string | null {
  return strip(file, format, mode).refusal
}

export interface Judged {
  name: string
  mode: Mode
  before: Tags
  after: Tags
  stored: Uint8Array
  changed: boolean
}

/**
 * Strips each file in both modes and reads every original and stored file with exiftool (one run): nothing stored
 * may carry location, nor, under 'all', descriptive metadata; each original must have shown some to begin with
 * (unless `clean` says it has none). A refusal fails the test.
 */
export async function stripAndJudge(
  files: { name: string; file: Uint8Array }[],
  format: ImageFormat,
  opts: { clean?: boolean } = {},
): Promise<Judged[]> {
  const runs = files.flatMap(({ name, file }) =>
    (['gps', 'all'] as const).map((mode) => {
      const { out, stored, refusal } = strip(file, format, mode)
      expect([name, mode, refusal]).toEqual([name, mode, null])
      return { name, mode, file, stored, changed: out !== null }
    }),
  )
  const tags = await readTagsOf([...files.map((f) => f.file), ...runs.map((r) => r.stored)])
  return runs.map((r, i) => {
    const before = tags[files.findIndex((f) => f.name === r.name)]!
    const after = tags[files.length + i]!
    if (!opts.clean) expect([r.name, locationTags(before).length > 0]).toEqual([r.name, true])
    expect([r.name, r.mode, locationTags(after)]).toEqual([r.name, r.mode, []])
    if (r.mode === 'all') expect([r.name, metadataTags(after)]).toEqual([r.name, []])
    return { name: r.name, mode: r.mode, before, after, stored: r.stored, changed: r.changed }
  })
}

/** Whether `part` occurs in `whole`, byte for byte (compressed picture data carried over unchanged). */
export const contains = (whole: Uint8Array, part: Uint8Array) => Buffer.from(whole).indexOf(Buffer.from(part)) >= 0

// --- RIFF (WebP) ---------------------------------------------------------------------------------------------------

export function riffChunk(type: string, data: Uint8Array | string): Bytes {
  const payload = typeof data === 'string' ? Buffer.from(data, 'latin1') : Buffer.from(data)
  const head = Buffer.alloc(8)
  head.write(type, 0, 'latin1')
  head.writeUInt32LE(payload.length, 4)
  return new Uint8Array(Buffer.concat([head, payload, Buffer.alloc(payload.length & 1)]))
}

/** The chunks of a WebP as a plain reader sees them. */
export function webpChunks(b: Uint8Array): { type: string; data: Uint8Array }[] {
  const buf = Buffer.from(b)
  const out = []
  for (let at = 12; at + 8 <= Math.min(buf.length, 8 + buf.readUInt32LE(4)); ) {
    const size = buf.readUInt32LE(at + 4)
    out.push({ type: buf.toString('latin1', at, at + 4), data: b.subarray(at + 8, at + 8 + size) })
    at += 8 + size + (size & 1)
  }
  return out
}

/** A WebP of these chunks (the RIFF size counting them all). */
export function riff(chunks: Uint8Array[]): Bytes {
  const out = Buffer.from(concat(['RIFF', [0, 0, 0, 0], 'WEBP', ...chunks]))
  out.writeUInt32LE(out.length - 8, 4)
  return new Uint8Array(out)
}

// --- ISO base media (HEIF) -----------------------------------------------------------------------------------------

export function isoBox(type: string, ...parts: (Uint8Array | number[] | string)[]): Bytes {
  const payload = concat(parts)
  const head = Buffer.alloc(8)
  head.writeUInt32BE(payload.length + 8, 0)
  head.write(type, 4, 'latin1')
  return new Uint8Array(Buffer.concat([head, payload]))
}

export const isoFullBox = (type: string, version: number, ...parts: (Uint8Array | number[] | string)[]) =>
  isoBox(type, [version, 0, 0, 0], ...parts)

/** The boxes between `start` and `end` (32-bit sizes, as the tools here write them). */
export function isoBoxes(b: Uint8Array, start = 0, end = b.length) {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length)
  const out: { type: string; start: number; end: number }[] = []
  for (let at = start; at + 8 <= end; ) {
    const size = buf.readUInt32BE(at)
    if (size < 8) break
    out.push({ type: buf.toString('latin1', at + 4, at + 8), start: at, end: at + size })
    at += size
  }
  return out
}

/** The file with the box at [start, end) replaced by `with` and every enclosing box's size fixed. */
export function replaceBox(b: Uint8Array, path: { start: number; end: number }[], replacement: Uint8Array): Bytes {
  const target = path[path.length - 1]!
  const out = Buffer.from(concat([b.subarray(0, target.start), replacement, b.subarray(target.end)]))
  const delta = replacement.length - (target.end - target.start)
  for (const parent of path.slice(0, -1)) out.writeUInt32BE(parent.end - parent.start + delta, parent.start)
  return new Uint8Array(out)
}
