import { ascii, concat, startsWith, u32le } from '../bytes'
import { type Cost, unsafe } from './cost'
import { cleanExif } from './tiff'

/**
 * WebP: the RIFF chunks are walked whole and the file written again from the known ones. A simple file keeps its one
 * VP8/VP8L chunk. An extended one keeps VP8X (its flags set to what is kept), ICCP, and either ANIM and the frames
 * (ANMF, rebuilt with only their ALPH/VP8/VP8L sub-chunks) or the still picture (ALPH, VP8/VP8L), as its animation
 * flag says, and EXIF rebuilt by cleanExif
 * ('gps': the whitelist; 'all': a non-default orientation only), read with or without an "Exif\0\0" prefix. Dropped: XMP,
 * unknown chunks, a second copy of a chunk that may appear once, data after the RIFF end. A chunk that runs past the
 * RIFF end, or a file that starts with no image chunk, is refused.
 */

const FLAG_ICC = 0x20
const FLAG_ALPHA = 0x10
const FLAG_EXIF = 0x08
const FLAG_ANIMATION = 0x02
const EXIF_PREFIX = [0x45, 0x78, 0x69, 0x66, 0, 0] // "Exif\0\0"
/** The chunks of a still picture (also inside each frame); an animation has frames instead. */
const FRAME_CHUNKS = new Set(['ALPH', 'VP8 ', 'VP8L'])
/** Chunks an extended file may hold once: still or animated. */
const ONCE = { still: new Set(['ICCP', 'EXIF', ...FRAME_CHUNKS]), animated: new Set(['ICCP', 'EXIF', 'ANIM']) }

interface Chunk {
  type: string
  start: number
  /** The payload (without the pad byte). */
  data: Uint8Array
}

const cut = () => unsafe('a WebP chunk that runs past the end of its container')

/** The chunks between `start` and `end`; a missing pad byte after the last one is forgiven. */
function chunks(b: Uint8Array, start: number, end: number, cost: Cost): Chunk[] {
  const out: Chunk[] = []
  let pos = start
  while (pos + 8 <= end) {
    const size = u32le(b, pos + 4)
    if (pos + 8 + size > end) throw cut()
    out.push({ type: ascii(b, pos, 4), start: pos, data: b.subarray(pos + 8, pos + 8 + size) })
    cost.add(8)
    pos += 8 + size + (size & 1)
  }
  return out
}

/** A chunk written anew: header, payload, pad byte. */
function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + data.length + (data.length & 1))
  for (let i = 0; i < 4; i++) out[i] = type.charCodeAt(i)
  new DataView(out.buffer).setUint32(4, data.length, true)
  out.set(data, 8)
  return out
}

/** An animation frame: its 16-byte header and only the sub-chunks that make its picture. */
function frame(b: Uint8Array, anmf: Chunk, cost: Cost): Uint8Array {
  if (anmf.data.length < 16) throw cut()
  const base = anmf.start + 8
  const seen = new Set<string>()
  const parts = [anmf.data.subarray(0, 16)]
  for (const c of chunks(b, base + 16, base + anmf.data.length, cost)) {
    if (!FRAME_CHUNKS.has(c.type) || seen.has(c.type)) continue
    seen.add(c.type)
    parts.push(chunk(c.type, c.data))
  }
  return chunk('ANMF', concat(parts))
}

/**
 * The EXIF chunk: as it was when cleanExif keeps it whole, else rebuilt as the WebP format defines it, a bare TIFF
 * structure (exiftool calls an "Exif\0\0" prefix there improper); null when nothing of it is kept.
 */
function exif(c: Chunk, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  const tiff = c.data.subarray(startsWith(c.data, EXIF_PREFIX) ? 6 : 0)
  const clean = cleanExif(tiff, mode, cost)
  return clean && chunk('EXIF', clean === tiff ? c.data : clean)
}

/** The rebuilt WebP, or null when it is already exactly what would be written. */
export function stripWebp(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  if (b.length < 12) throw cut()
  const riffEnd = 8 + u32le(b, 4)
  if (riffEnd > b.length) throw cut()
  const all = chunks(b, 12, riffEnd, cost)
  const first = all[0]
  if (!first || !['VP8 ', 'VP8L', 'VP8X'].includes(first.type)) throw unsafe('a WebP that starts with no image chunk')
  let parts: Uint8Array[]
  if (first.type !== 'VP8X') parts = [chunk(first.type, first.data)]
  else {
    if (first.data.length < 10) throw cut()
    parts = [new Uint8Array(0)] // VP8X, once the flags are known
    let flags = first.data[0]! & (FLAG_ALPHA | FLAG_ANIMATION)
    const animated = (flags & FLAG_ANIMATION) !== 0
    const once = animated ? ONCE.animated : ONCE.still
    const seen = new Set<string>()
    for (const c of all.slice(1)) {
      if (seen.has(c.type)) continue
      if (once.has(c.type)) seen.add(c.type)
      if (c.type === 'ANMF' && animated) parts.push(frame(b, c, cost))
      else if (c.type === 'EXIF') {
        const rebuilt = exif(c, mode, cost)
        if (rebuilt) parts.push(rebuilt)
        flags |= rebuilt ? FLAG_EXIF : 0
      } else if (once.has(c.type)) {
        parts.push(chunk(c.type, c.data))
        flags |= c.type === 'ICCP' ? FLAG_ICC : 0
      }
    }
    const vp8x = new Uint8Array(10)
    vp8x.set(first.data.subarray(4, 10), 4) // the canvas size
    vp8x[0] = flags
    parts[0] = chunk('VP8X', vp8x)
  }
  const body = concat(parts)
  const out = new Uint8Array(12 + body.length)
  out.set(b.subarray(0, 12))
  new DataView(out.buffer).setUint32(4, 4 + body.length, true)
  out.set(body, 12)
  cost.add(out.length)
  return out.length === b.length && Buffer.from(out).equals(Buffer.from(b.buffer, b.byteOffset, b.length)) ? null : out
}
