import { open, rename, unlink } from 'node:fs/promises'
import { ascii, startsWith, u32be } from './bytes'
import { isPng } from './detect'
import type { ImageFormat } from './formats'
import { Cost } from './metadata/cost'
import { stripGif } from './metadata/gif'
import { stripHeif } from './metadata/heif'
import { stripJpeg } from './metadata/jpeg'
import { PNG_METADATA_CHUNKS, stripPng } from './metadata/png'
import { stripSvg } from './metadata/svg'
import { scrubTiff } from './metadata/tiff'
import { stripWebp } from './metadata/webp'

export { Cost, LOCATION_UNSAFE } from './metadata/cost'

/**
 * What to remove from uploads (STRIP_METADATA): 'gps' location only, 'all' metadata, 'none' keeps the file as sent.
 *
 * Edits are made to the container only, never by re-encoding, so pixels stay bit-identical. Under 'gps' every edit
 * is in place and keeps the file's length (a GPS directory zeroed, a GPS property replaced by spaces), so no offset
 * in the file moves; only a compressed PNG text chunk is compressed again. Under 'all', JPEG, PNG and WebP lose their
 * Exif, XMP, IPTC and comments, keeping a non-default Orientation in a minimal Exif (dropping it would show photos
 * turned sideways); TIFF, AVIF and HEIC, whose metadata is addressed by offsets, have it removed in place.
 * When location may be present and cannot be removed with certainty, the file is refused (a MediaError), never
 * stored with it. The cost of every step is linear in the file's size (see Cost), so no file can stall the server.
 * GIF, BMP, ICO and SVG are stored as sent.
 */
export type StripMode = 'gps' | 'all' | 'none'

type Stripper = (b: Uint8Array, mode: 'gps' | 'all', cost: Cost) => Uint8Array | null

const STRIPPERS: Partial<Record<ImageFormat, Stripper>> = {
  jpeg: (b, mode, cost) => (startsWith(b, [0xff, 0xd8]) ? stripJpeg(b, mode, cost) : null),
  png: (b, mode, cost) => (isPng(b) ? stripPng(b, mode, cost) : null),
  webp: (b, mode, cost) => (ascii(b, 0, 4) === 'RIFF' ? stripWebp(b, mode, cost) : null),
  tiff: (b, mode, cost) => (scrubTiff(b, mode, cost) ? b : null),
  avif: stripHeif,
  heic: stripHeif, // the same HEIF container
  gif: stripGif,
  svg: (b, mode, cost) => stripSvg(b, mode, cost, stripBytes),
}

/**
 * The bytes to store for a file of `format`, or null when it stays as it is. `b` is the caller's to give away: it may
 * be edited in place and returned. Throws a MediaError (the refusal) when location data may be present and cannot be
 * removed with certainty. `cost` counts the work done.
 */
export function stripBytes(b: Uint8Array, format: ImageFormat, mode: StripMode, cost = new Cost()): Uint8Array | null {
  const strip = STRIPPERS[format]
  return mode === 'none' || !strip ? null : strip(b, mode, cost)
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

/**
 * Removes metadata according to `mode`, rewriting the file in place (temp file + rename) only when something was
 * removed, so a file without such metadata keeps its exact bytes. Returns whether the file changed; throws a
 * MediaError, leaving the file as it was, when location data cannot be removed with certainty.
 */
export async function stripMetadata(path: string, format: ImageFormat, mode: StripMode): Promise<boolean> {
  if (mode === 'none' || !STRIPPERS[format]) return false
  if (format === 'png' && !(await pngMayHaveMetadata(path))) return false
  const stripped = stripBytes(await Bun.file(path).bytes(), format, mode)
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
