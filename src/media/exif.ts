import { open, rename, unlink } from 'node:fs/promises'
import { crc32, deflateSync, inflateSync } from 'node:zlib'
import { ascii, concat, startsWith, u16be, u32be, u32le } from './bytes'
import { isPng } from './detect'
import type { ImageFormat } from './formats'

/**
 * What to remove from uploads (STRIP_METADATA): 'gps' location only, 'all' metadata, 'none' keeps the file as sent.
 *
 * Edits are made to the container only, never by re-encoding, so pixels stay bit-identical:
 * - JPEG: 'gps' removes the GPS IFD from the Exif APP1 and GPS properties from XMP; 'all' drops every APP1 (Exif,
 *   XMP), APP13 (IPTC) and comment. ICC (APP2) and JFIF/Adobe segments stay since they change how pixels look.
 * - PNG: the same on eXIf and the XMP text chunk (iTXt or zTXt); 'all' drops eXIf, tEXt, iTXt, zTXt and tIME.
 * - WebP: the same on the EXIF and XMP chunks, fixing the RIFF size and the VP8X flags.
 * - 'all' keeps one thing: a non-default Orientation, rewritten as a minimal Exif holding only that tag, because
 *   dropping it would show photos turned sideways.
 * - TIFF and AVIF are stored unchanged: their metadata is addressed by absolute offsets in the image's own
 *   structure (TIFF IFDs, ISO-BMFF iloc), so removing it safely means rewriting the file's layout. GIF, BMP, ICO and SVG
 *   have no standard location metadata.
 */
export type StripMode = 'gps' | 'all' | 'none'

const GPS_IFD_TAG = 0x8825
const ORIENTATION_TAG = 0x0112
/** Bytes per value of each TIFF field type (index = type). */
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8]

const EXIF_HEADER = [0x45, 0x78, 0x69, 0x66, 0, 0] // "Exif\0\0"
const XMP_NAMESPACE = new TextEncoder().encode('http://ns.adobe.com/xap/1.0/\0')

/** Reads a TIFF structure (the body of an Exif block) in its own byte order; null if it is not one. */
function tiffReader(t: Uint8Array) {
  if (t.length < 8) return null
  const le = t[0] === 0x49 && t[1] === 0x49
  if (!le && !(t[0] === 0x4d && t[1] === 0x4d)) return null
  const u16 = (at: number) => (le ? t[at]! | (t[at + 1]! << 8) : u16be(t, at))
  const u32 = (at: number) => (le ? u32le(t, at) : u32be(t, at))
  const set16 = (at: number, v: number) => {
    t[at + (le ? 0 : 1)] = v & 0xff
    t[at + (le ? 1 : 0)] = v >> 8
  }
  return u16(2) === 42 ? { u16, u32, set16 } : null
}

/**
 * Removes location from a TIFF structure in place: the GPSInfo pointer leaves its IFD (later entries move up) and
 * the GPS directory and its values are zeroed. The length and every other offset stay as they were.
 */
function removeGps(t: Uint8Array): boolean {
  const r = tiffReader(t)
  if (!r) return false
  let removed = false
  const seen = new Set<number>()
  for (let ifd = r.u32(4); ifd !== 0 && !seen.has(ifd) && ifd + 2 <= t.length; ) {
    seen.add(ifd)
    let count = r.u16(ifd)
    let end = ifd + 2 + count * 12 + 4
    if (end > t.length) break
    for (let i = 0; i < count; ) {
      const entry = ifd + 2 + i * 12
      if (r.u16(entry) !== GPS_IFD_TAG) {
        i++
        continue
      }
      wipeIfd(t, r, r.u32(entry + 8))
      t.copyWithin(entry, entry + 12, end)
      t.fill(0, end - 12, end)
      end -= 12
      r.set16(ifd, --count)
      removed = true
    }
    ifd = r.u32(ifd + 2 + count * 12)
  }
  return removed
}

function wipeIfd(t: Uint8Array, r: NonNullable<ReturnType<typeof tiffReader>>, at: number): void {
  if (at < 8 || at + 2 > t.length) return
  const count = r.u16(at)
  const end = Math.min(at + 2 + count * 12 + 4, t.length)
  for (let e = at + 2; e + 12 <= end; e += 12) {
    const size = (TYPE_SIZES[r.u16(e + 2)] ?? 1) * r.u32(e + 4)
    if (size > 4) {
      const value = r.u32(e + 8)
      if (value < t.length) t.fill(0, value, Math.min(value + size, t.length))
    }
  }
  t.fill(0, at, end)
}

function readOrientation(t: Uint8Array): number | undefined {
  const r = tiffReader(t)
  if (!r) return undefined
  const ifd = r.u32(4)
  if (ifd + 2 > t.length) return undefined
  for (let i = 0, count = r.u16(ifd); i < count && ifd + 14 + i * 12 <= t.length; i++) {
    const entry = ifd + 2 + i * 12
    if (r.u16(entry) === ORIENTATION_TAG) return r.u16(entry + 8)
  }
  return undefined
}

/** A big-endian TIFF structure whose IFD0 holds only Orientation. */
function orientationOnlyTiff(orientation: number): Uint8Array {
  return new Uint8Array([
    0x4d, 0x4d, 0, 42, 0, 0, 0, 8, // header, IFD0 at 8
    0, 1, // one entry
    0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, // Orientation, SHORT, 1 value
    0, 0, 0, 0, // no next IFD
  ])
}

const keepsOrientation = (o: number | undefined): o is number => o !== undefined && o >= 2 && o <= 8

/** Drops XMP properties whose local name starts with GPS (exif:GPSLatitude etc.), as attributes or as elements. */
function scrubXmp(xmp: Uint8Array): Uint8Array | null {
  const xml = new TextDecoder().decode(xmp)
  const out = xml
    .replace(/\s[\w.-]+:GPS\w*\s*=\s*(?:"[^"]*"|'[^']*')/g, '')
    .replace(/<([\w.-]+:GPS\w*)\b[^>]*?(?:\/>|>[\s\S]*?<\/\1\s*>)/g, '')
  return out === xml ? null : new TextEncoder().encode(out)
}

function jpegSegment(marker: number, payload: Uint8Array): Uint8Array {
  const length = payload.length + 2
  return concat([new Uint8Array([0xff, marker, length >> 8, length & 0xff]), payload])
}

function stripJpeg(b: Uint8Array, mode: 'gps' | 'all'): Uint8Array | null {
  const parts: Uint8Array[] = [b.subarray(0, 2)]
  let changed = false
  let orientation: number | undefined
  let exifSlot = -1
  let pos = 2
  while (pos + 4 <= b.length) {
    if (b[pos] !== 0xff) return null // not a marker where one must be: leave a file we do not understand alone
    const marker = b[pos + 1]!
    if (marker === 0xff) {
      pos++ // fill byte
      continue
    }
    if (marker === 0xda || marker === 0xd9) break // scan data follows and is copied verbatim
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      parts.push(b.subarray(pos, pos + 2))
      pos += 2
      continue
    }
    const end = pos + 2 + u16be(b, pos + 2)
    if (end > b.length) return null
    const segment = b.subarray(pos, end)
    const payload = b.subarray(pos + 4, end)
    pos = end
    const isExif = marker === 0xe1 && startsWith(payload, EXIF_HEADER)
    if (mode === 'all' && (marker === 0xe1 || marker === 0xed || marker === 0xfe)) {
      if (isExif) {
        orientation ??= readOrientation(payload.subarray(EXIF_HEADER.length))
        if (exifSlot < 0) exifSlot = parts.length
      }
      changed = true
      continue
    }
    if (mode === 'gps' && isExif) {
      const copy = segment.slice()
      if (removeGps(copy.subarray(4 + EXIF_HEADER.length))) {
        parts.push(copy)
        changed = true
        continue
      }
    }
    if (mode === 'gps' && marker === 0xe1 && startsWith(payload, [...XMP_NAMESPACE])) {
      const scrubbed = scrubXmp(payload.subarray(XMP_NAMESPACE.length))
      if (scrubbed) {
        parts.push(jpegSegment(0xe1, concat([XMP_NAMESPACE, scrubbed])))
        changed = true
        continue
      }
    }
    parts.push(segment)
  }
  if (!changed) return null
  if (keepsOrientation(orientation)) {
    const exif = concat([new Uint8Array(EXIF_HEADER), orientationOnlyTiff(orientation)])
    parts.splice(exifSlot, 0, jpegSegment(0xe1, exif))
  }
  parts.push(b.subarray(pos))
  return concat(parts)
}

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const typeBytes = new TextEncoder().encode(type)
  const out = new Uint8Array(12 + data.length)
  const view = new DataView(out.buffer)
  view.setUint32(0, data.length)
  out.set(typeBytes, 4)
  out.set(data, 8)
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)))
  return out
}

/** PNG chunks that only describe the image; dropping them never changes how it looks. */
const PNG_METADATA_CHUNKS = new Set(['eXIf', 'tEXt', 'iTXt', 'zTXt', 'tIME'])

const XMP_KEYWORD = 'XML:com.adobe.xmp\0'
/** Inflated XMP larger than this is left alone rather than letting a zip bomb fill memory. */
const MAX_XMP_BYTES = 16 * 1024 * 1024

/**
 * The XMP packet of an iTXt or zTXt chunk (Adobe writes iTXt, libvips compressed zTXt), split from the chunk's
 * header so it can be rewritten; null for other text chunks.
 */
function pngXmp(type: string, data: Uint8Array): { header: Uint8Array; xmp: Uint8Array; compressed: boolean } | null {
  if (ascii(data, 0, XMP_KEYWORD.length) !== XMP_KEYWORD) return null
  let textStart: number
  let compressed: boolean
  if (type === 'zTXt') {
    textStart = XMP_KEYWORD.length + 1 // compression method
    compressed = true
  } else {
    // Compression flag and method, then a language tag and a translated keyword, each ending in NUL.
    compressed = data[XMP_KEYWORD.length] === 1
    const language = data.indexOf(0, XMP_KEYWORD.length + 2)
    const translated = language < 0 ? -1 : data.indexOf(0, language + 1)
    if (translated < 0) return null
    textStart = translated + 1
  }
  const text = data.subarray(textStart)
  try {
    const xmp = compressed ? new Uint8Array(inflateSync(text, { maxOutputLength: MAX_XMP_BYTES })) : text
    return { header: data.subarray(0, textStart), xmp, compressed }
  } catch {
    return null
  }
}

function stripPng(b: Uint8Array, mode: 'gps' | 'all'): Uint8Array | null {
  const parts: Uint8Array[] = [b.subarray(0, 8)]
  let changed = false
  let orientation: number | undefined
  let exifSlot = -1
  let pos = 8
  while (pos + 12 <= b.length) {
    const length = u32be(b, pos)
    const type = ascii(b, pos + 4, 4)
    const end = pos + 12 + length
    if (end > b.length) return null
    const chunk = b.subarray(pos, end)
    const data = b.subarray(pos + 8, end - 4)
    pos = end
    if (mode === 'all' && PNG_METADATA_CHUNKS.has(type)) {
      if (type === 'eXIf') {
        orientation ??= readOrientation(data)
        if (exifSlot < 0) exifSlot = parts.length
      }
      changed = true
      continue
    }
    if (mode === 'gps' && type === 'eXIf') {
      const copy = data.slice()
      if (removeGps(copy)) {
        parts.push(pngChunk(type, copy))
        changed = true
        continue
      }
    }
    const xmp = mode === 'gps' && (type === 'iTXt' || type === 'zTXt') ? pngXmp(type, data) : null
    const scrubbed = xmp && scrubXmp(xmp.xmp)
    if (xmp && scrubbed) {
      parts.push(pngChunk(type, concat([xmp.header, xmp.compressed ? deflateSync(scrubbed) : scrubbed])))
      changed = true
      continue
    }
    parts.push(chunk)
    if (type === 'IEND') break
  }
  if (!changed) return null
  if (keepsOrientation(orientation)) parts.splice(exifSlot, 0, pngChunk('eXIf', orientationOnlyTiff(orientation)))
  parts.push(b.subarray(pos))
  return concat(parts)
}

const VP8X_EXIF = 0x08
const VP8X_XMP = 0x04

function stripWebp(b: Uint8Array, mode: 'gps' | 'all'): Uint8Array | null {
  if (b.length < 20 || ascii(b, 12, 4) !== 'VP8X') return null // simple WebP files cannot carry metadata
  const chunks: { type: string; data: Uint8Array }[] = []
  const riffEnd = Math.min(b.length, 8 + u32le(b, 4))
  let changed = false
  let orientation: number | undefined
  for (let pos = 12; pos + 8 <= riffEnd; ) {
    const type = ascii(b, pos, 4)
    const size = u32le(b, pos + 4)
    if (pos + 8 + size > riffEnd) return null
    let data = b.subarray(pos + 8, pos + 8 + size)
    pos += 8 + size + (size & 1)
    // Some writers put the JPEG-style "Exif\0\0" prefix in front of the TIFF structure.
    const tiffStart = startsWith(data, EXIF_HEADER) ? EXIF_HEADER.length : 0
    if (mode === 'all' && (type === 'EXIF' || type === 'XMP ')) {
      if (type === 'EXIF') orientation ??= readOrientation(data.subarray(tiffStart))
      changed = true
      continue
    }
    if (mode === 'gps' && type === 'EXIF') {
      const copy = data.slice()
      if (removeGps(copy.subarray(tiffStart))) {
        data = copy
        changed = true
      }
    }
    const scrubbed = mode === 'gps' && type === 'XMP ' ? scrubXmp(data) : null
    if (scrubbed) {
      data = scrubbed
      changed = true
    }
    chunks.push({ type, data })
  }
  if (!changed) return null
  if (keepsOrientation(orientation)) chunks.push({ type: 'EXIF', data: orientationOnlyTiff(orientation) })

  const vp8x = chunks[0]!.data.slice()
  const has = (type: string) => chunks.some((c) => c.type === type)
  vp8x[0] = (vp8x[0]! & ~(VP8X_EXIF | VP8X_XMP)) | (has('EXIF') ? VP8X_EXIF : 0) | (has('XMP ') ? VP8X_XMP : 0)
  chunks[0] = { type: 'VP8X', data: vp8x }

  const encoded = chunks.map(({ type, data }) => {
    const out = new Uint8Array(8 + data.length + (data.length & 1))
    out.set(new TextEncoder().encode(type), 0)
    new DataView(out.buffer).setUint32(4, data.length, true)
    out.set(data, 8)
    return out
  })
  const body = concat([new TextEncoder().encode('WEBP'), ...encoded])
  const header = new Uint8Array(8)
  header.set(new TextEncoder().encode('RIFF'), 0)
  new DataView(header.buffer).setUint32(4, body.length, true)
  return concat([header, body])
}

/**
 * Whether a PNG holds any chunk the stripper could act on, from its chunk headers alone, read in blocks into one
 * buffer: a large PNG without metadata (most of them) is never held in memory whole. Reading every 50 MB upload of a
 * batch whole made peak RSS grow by 200-350 MB (bench/README.md).
 */
async function pngMayHaveMetadata(path: string): Promise<boolean> {
  const file = await open(path, 'r')
  try {
    const buf = new Uint8Array(1 << 20)
    let next = 8 // absolute offset of the next chunk header, after the signature
    for (;;) {
      const { bytesRead } = await file.read(buf, 0, buf.length, next)
      if (bytesRead < 8) return false
      let at = 0
      while (at + 8 <= bytesRead) {
        if (PNG_METADATA_CHUNKS.has(ascii(buf, at + 4, 4))) return true
        at += 12 + u32be(buf, at)
      }
      // The next header lies past this block (or is cut by its end): read on from there, skipping chunk data between.
      next += at
    }
  } finally {
    await file.close()
  }
}

const STRIPPERS: Partial<Record<ImageFormat, (b: Uint8Array, mode: 'gps' | 'all') => Uint8Array | null>> = {
  jpeg: (b, mode) => (startsWith(b, [0xff, 0xd8]) ? stripJpeg(b, mode) : null),
  png: (b, mode) => (isPng(b) ? stripPng(b, mode) : null),
  webp: (b, mode) => (ascii(b, 0, 4) === 'RIFF' ? stripWebp(b, mode) : null),
}

/**
 * Removes metadata according to `mode`, rewriting the file in place (temp file + rename) only when something was
 * removed, so a file without such metadata keeps its exact bytes. Returns whether the file changed.
 */
export async function stripMetadata(path: string, format: ImageFormat, mode: StripMode): Promise<boolean> {
  const strip = STRIPPERS[format]
  if (mode === 'none' || !strip) return false
  if (format === 'png' && !(await pngMayHaveMetadata(path))) return false
  const stripped = strip(await Bun.file(path).bytes(), mode)
  if (!stripped) return false
  const temp = `${path}.${crypto.randomUUID()}.tmp`
  try {
    await Bun.write(temp, stripped)
    await rename(temp, path)
  } catch (err) {
    await unlink(temp).catch(() => {})
    throw err
  }
  return true
}
