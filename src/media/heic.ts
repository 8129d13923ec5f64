import type { RgbaImage } from './bmp'
import { exceedsMessage, MediaError } from './errors'

/**
 * HEIC/HEIF pictures are HEVC, which sharp's prebuilt libvips cannot decode: libheif (with libde265) compiled to wasm
 * (heic-decode over libheif-js) decodes them in the media worker. It is loaded on the first HEIC a process sees, so
 * workers that never meet one do not pay for its 2 MB of code. Its wasm memory grows to the largest image decoded and
 * is given back when the idle worker exits (src/workers/media-pool.ts).
 */
let decoder: Promise<typeof import('heic-decode').default> | undefined
const loadDecoder = () => {
  decoder ??= import('heic-decode').then((m) => m.default)
  return decoder
}

/**
 * Runs the decoder with console.log silenced: libheif-js prints every failure (with its internals) there as well as
 * reporting it, and a file's failure is the uploader's 400, not a line in the server's output for anyone to fill.
 * A media process runs one job at a time, so nothing else of it logs meanwhile.
 */
async function quietly<T>(run: () => Promise<T>): Promise<T> {
  const log = console.log
  console.log = () => {}
  try {
    return await run()
  } finally {
    console.log = log
  }
}

/**
 * The primary picture of a HEIC/HEIF file as RGBA, its rotation and mirroring (irot/imir) applied, as every HEIF reader
 * shows it (an Exif Orientation tag inside HEIF is informative only and is ignored, like libheif and browsers do).
 * heic-decode lists the file's top-level pictures without saying which is the primary one, so the primary is found
 * by its upright size `primary` (from the probe, which reads the primary's): the first picture of that size, and a
 * file with none is refused. The size is checked before any pixel is decoded: over `maxPixels`, or an RGBA buffer
 * over `maxBytes` held twice (in the decoder's memory and copied out of it), is refused.
 */
export async function decodeHeic(
  file: Uint8Array,
  primary: { width: number; height: number },
  maxPixels: number,
  maxBytes: number,
): Promise<RgbaImage> {
  const decode = await loadDecoder()
  // The pixels of an earlier HEIC (hundreds of MB for a large photo) are garbage by now but not yet collected: without
  // this, a worker's third 48-megapixel HEIC in a row passed 1 GB of resident memory (two, 930 MB), killing the job.
  Bun.gc(true)
  let images: Awaited<ReturnType<typeof decode.all>>
  try {
    images = await quietly(() => decode.all({ buffer: file }))
  } catch {
    throw new MediaError('Image could not be decoded')
  }
  try {
    const image = images.find((i) => i.width === primary.width && i.height === primary.height)
    if (!image) throw new MediaError('Image could not be decoded')
    const { width, height } = image
    if (width * height > maxPixels) throw new MediaError(exceedsMessage(maxPixels))
    if (width * height * 4 * 2 > maxBytes) throw new MediaError('Image needs too much memory to decode')
    const pixels = await quietly(() => image.decode()).catch(() => {
      throw new MediaError('Image could not be decoded')
    })
    const data = new Uint8Array(pixels.data.buffer, pixels.data.byteOffset, pixels.data.byteLength)
    return { width: pixels.width, height: pixels.height, data }
  } finally {
    images.dispose()
  }
}
