import { open, rename, unlink } from 'node:fs/promises'
import { ascii } from './bytes'
import type { ImageFormat } from './formats'
import { Cost } from './metadata/cost'
import { stripGif } from './metadata/gif'
import { stripHeif } from './metadata/heif'
import { stripIco } from './metadata/ico'
import { stripJpeg } from './metadata/jpeg'
import { pngHasMetadata, stripPng } from './metadata/png'
import { stripSvg } from './metadata/svg'
import { stripTiff } from './metadata/tiff'
import { stripWebp } from './metadata/webp'

export { Cost, LOCATION_UNSAFE } from './metadata/cost'

/**
 * What to remove from uploads (STRIP_METADATA): 'gps' location only, 'all' metadata, 'none' keeps the file as sent.
 *
 * Each stripper walks its container whole and writes a new file from the parts known to be safe, dropping everything
 * else (unknown chunks, boxes, segments and tags, text, comments, data after the end); it never edits metadata in
 * place and never decodes or encodes pixels, which are copied byte for byte. 'gps' keeps Exif rebuilt from a
 * whitelist without any location (cleanExif in metadata/tiff.ts); 'all' keeps only pixels, colour, orientation and
 * animation. A file with nothing to drop is kept byte for byte. A file whose picture cannot be walked whole is
 * refused (a MediaError). The cost of every step is linear in the file's size (see Cost), so no file can stall the
 * server. BMP, which carries no metadata, is stored as sent. docs/security.md: Location privacy.
 */
export type StripMode = 'gps' | 'all' | 'none'

type Stripper = (b: Uint8Array, mode: 'gps' | 'all', cost: Cost) => Uint8Array | null

const STRIPPERS: Partial<Record<ImageFormat, Stripper>> = {
  jpeg: stripJpeg,
  png: stripPng,
  webp: (b, mode, cost) => (ascii(b, 0, 4) === 'RIFF' ? stripWebp(b, mode, cost) : null),
  tiff: stripTiff,
  avif: stripHeif,
  heic: stripHeif, // the same HEIF container
  gif: stripGif,
  ico: stripIco, // its PNG images, which carry metadata like any PNG
  svg: (b, mode, cost) => stripSvg(b, mode, cost, stripBytes),
}

/**
 * The bytes to store for a file of `format`, or null when it stays as it is. Throws a MediaError (the refusal) when
 * the file cannot be rebuilt safely. `cost` counts the work done.
 */
export function stripBytes(b: Uint8Array, format: ImageFormat, mode: StripMode, cost = new Cost()): Uint8Array | null {
  const strip = STRIPPERS[format]
  return mode === 'none' || !strip ? null : strip(b, mode, cost)
}

/** Whether the PNG at `path` holds anything to drop, read from its chunk headers alone (pngHasMetadata). */
async function pngHasMetadataAt(path: string): Promise<boolean> {
  const file = await open(path, 'r')
  try {
    const { size } = await file.stat()
    return await pngHasMetadata(size, async (buf, at) => (await file.read(buf, 0, buf.length, at)).bytesRead)
  } finally {
    await file.close()
  }
}

/**
 * Removes metadata according to `mode`, replacing the file (temp file + rename) only when something was removed, so
 * a file without such metadata keeps its exact bytes. Returns whether the file changed; throws a MediaError, leaving
 * the file as it was, when it cannot be rebuilt safely.
 */
export async function stripMetadata(path: string, format: ImageFormat, mode: StripMode): Promise<boolean> {
  if (mode === 'none' || !STRIPPERS[format]) return false
  if (format === 'png' && !(await pngHasMetadataAt(path))) return false
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
