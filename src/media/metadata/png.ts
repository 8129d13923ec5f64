import { crc32 } from 'node:zlib'
import { ascii, concat, startsWith, u32be } from '../bytes'
import { isPng } from '../detect'
import { type Cost, unsafe } from './cost'
import { cleanExif } from './tiff'

/**
 * PNG chunks kept as they are, in both modes: the picture (IHDR, PLTE, IDAT, IEND, tRNS), its colour (gAMA, cHRM,
 * sRGB, iCCP, cICP, and the HDR mastering data mDCv, cLLi), how to show it (sBIT, bKGD, pHYs) and APNG's animation
 * (acTL, fcTL, fdAT). Exact types only: a chunk spelled in another case is another chunk.
 */
const PNG_KEPT_CHUNKS: ReadonlySet<string> = new Set([
  'IHDR',
  'PLTE',
  'IDAT',
  'IEND',
  'tRNS',
  'gAMA',
  'cHRM',
  'sRGB',
  'iCCP',
  'cICP',
  'mDCv',
  'cLLi',
  'sBIT',
  'bKGD',
  'pHYs',
  'acTL',
  'fcTL',
  'fdAT',
])
/** Chunks without which the picture is lost: one cut off by the end of the file is refused, not dropped. */
const PICTURE_CHUNKS = new Set(['IHDR', 'PLTE', 'IDAT', 'fdAT'])
const EXIF = [0x45, 0x78, 0x69, 0x66, 0, 0] // "Exif\0\0", which some writers put before the TIFF header

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length)
  const view = new DataView(out.buffer)
  view.setUint32(0, data.length)
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i)
  out.set(data, 8)
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)))
  return out
}

/** The first eXIf as it is stored: kept (true), rebuilt by cleanExif (a new chunk), or dropped (null). */
function exifChunk(data: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | true | null {
  const tiff = startsWith(data, EXIF) ? data.subarray(EXIF.length) : data
  const clean = cleanExif(tiff, mode, cost)
  if (clean === data) return true
  return clean && pngChunk('eXIf', clean)
}

/**
 * A PNG rebuilt from its chunks: those of PNG_KEPT_CHUNKS copied as they are, the first eXIf rebuilt by cleanExif
 * (under 'all' it keeps only a turned or mirrored orientation); everything else is dropped: text chunks (tEXt, zTXt,
 * iTXt: XMP, ImageMagick's raw profiles, exif:GPS* keys), tIME, further eXIf, private and unknown chunks, a metadata
 * chunk cut off by the end of the file, and anything after IEND. Returns null when nothing was dropped. Throws the
 * refusal when a chunk of the picture is cut off or there is no IHDR.
 */
export function stripPng(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  if (!isPng(b)) throw unsafe('not a PNG')
  const parts: Uint8Array[] = [b.subarray(0, 8)]
  let changed = false
  let exifSeen = false
  let header = false
  let pos = 8
  while (pos + 12 <= b.length) {
    const length = u32be(b, pos)
    const type = ascii(b, pos + 4, 4)
    const end = pos + 12 + length
    cost.add(12)
    if (end > b.length) {
      if (PICTURE_CHUNKS.has(type)) throw unsafe(`a PNG ${type} chunk cut off by the end of the file`)
      break
    }
    header ||= type === 'IHDR'
    let kept: Uint8Array | true | null = PNG_KEPT_CHUNKS.has(type) || null
    if (type === 'eXIf' && !exifSeen) {
      exifSeen = true
      kept = exifChunk(b.subarray(pos + 8, end - 4), mode, cost)
    }
    if (kept === true) parts.push(b.subarray(pos, end))
    else if (kept) parts.push(kept)
    changed ||= kept !== true
    pos = end
    if (type === 'IEND') break
  }
  if (!header) throw unsafe('a PNG without its IHDR chunk')
  if (!changed && pos === b.length) return null
  const out = concat(parts)
  cost.add(out.length)
  return out
}

/**
 * Whether a PNG holds anything stripPng would drop or rebuild, decided from chunk headers alone (`read` fills `buf`
 * from a file offset and says how many bytes it read): a large PNG without metadata (most of them) is never held in
 * memory whole. Reading every 50 MB upload of a batch whole made peak RSS grow by 200-350 MB (bench/README.md).
 */
export async function pngHasMetadata(
  size: number,
  read: (buf: Uint8Array, at: number) => Promise<number>,
): Promise<boolean> {
  const buf = new Uint8Array(1 << 20)
  let next = 8 // absolute offset of the next chunk header, after the signature
  for (;;) {
    const bytesRead = await read(buf, next)
    if (bytesRead < 12) return next !== size // a cut chunk, or bytes that are not one
    let at = 0
    while (at + 8 <= bytesRead) {
      const type = ascii(buf, at + 4, 4)
      const end = next + at + 12 + u32be(buf, at)
      if (!PNG_KEPT_CHUNKS.has(type) || end > size) return true
      if (type === 'IEND') return end !== size
      at += 12 + u32be(buf, at)
    }
    // The next header lies past this block (or is cut by its end): read on from there, skipping chunk data between.
    next += at
  }
}
