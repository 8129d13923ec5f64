import sharp, { type Sharp, type SharpOptions } from 'sharp'
import { BMP_HEAD_BYTES, decodeBmp, readBmpSize } from './bmp'
import { IMAGE_BYTES, IMAGE_SIDE } from './classifier-input'
import { DETECT_HEAD_BYTES, detectFormat } from './detect'
import { exceedsMessage, MediaError } from './errors'
import type { ImageFormat } from './formats'
import { decodeHeic } from './heic'
import { decodeIco, icoEntrySize, largestIcoEntry } from './ico'
import { hashInput, perceptualHash } from './phash'
import { svgWork } from './svg-work'
import { THUMBNAIL_SIZE } from './thumbnail'
import { renderWork, SVG_ELEMENT_WORK, THUMBNAIL_BOX, tooCostly, type WorkFacts, workBudget } from './work'

export { MediaError } from './errors'

export interface ImageInfo extends WorkFacts {
  animated: boolean
}

/** A resized copy to make (src/modules/variants/model.ts says which values are allowed). */
export interface VariantSpec {
  width: number
  /** Absent: the width alone bounds it. */
  height?: number
  fit: 'cover' | 'contain' | 'inside' | 'fill'
  format: 'webp' | 'avif' | 'jpg' | 'png'
}

export interface MediaProcessor {
  /** Detects the format from bytes, probes dimensions from the header (refusing > maxPixels BEFORE decoding any pixel), throws MediaError. */
  inspect(path: string): Promise<ImageInfo>
  /**
   * The image decoded, as a sharp pipeline to resize and encode (every format, HEIC included; `allFrames`: an animation
   * keeps its frames). What is made from an original starts here. Throws MediaError when it cannot be decoded.
   */
  open(path: string, info: ImageInfo, allFrames: boolean): Promise<Sharp>
  /** Fully decodes the image and writes a WebP thumbnail fitting within 500x500 (never enlarged; animated when the source is animated), returns its dimensions. Throws MediaError when the image cannot be decoded. */
  thumbnail(path: string, info: ImageInfo, destPath: string): Promise<{ width: number; height: number }>
  /** 224x224 RGB (3 bytes per pixel, row-major, length 150528) of the first frame, for the NSFW classifier. */
  classifierInput(path: string, info: ImageInfo): Promise<Uint8Array>
  /**
   * Decodes the image (as `thumbnail` does) and writes it resized to `spec` at `destPath`: never enlarged; animated
   * when the source is and the format is WebP; JPEG has no alpha, so transparency goes onto white.
   */
  variant(
    path: string,
    info: ImageInfo,
    spec: VariantSpec,
    destPath: string,
  ): Promise<{ width: number; height: number }>
  /**
   * `thumbnail` and the perceptual hash (src/media/phash.ts; null for a picture too plain to hash) from a single decode
   * of the original (both made from its pixels at the thumbnail's size), and, when `early` is given, the classifier's
   * input from the same pixels: handed to `early` as soon as it is cut, before the thumbnail is encoded, so a scan can
   * run meanwhile.
   */
  thumbnailAndClassifierInput(
    path: string,
    info: ImageInfo,
    destPath: string,
    early?: (classifierInput: Uint8Array) => void,
  ): Promise<{ width: number; height: number; phash: string | null }>
  /** The perceptual hash of a file as an upload of it would get (`cli block`). */
  perceptualHash(path: string, info: ImageInfo): Promise<string | null>
}

const undecodable = () => new MediaError('Image could not be decoded')

async function readHead(path: string, bytes: number, from = 0): Promise<Uint8Array> {
  return new Uint8Array(
    await Bun.file(path)
      .slice(from, from + bytes)
      .arrayBuffer(),
  )
}

/** Runs a sharp operation, turning its failures (all caused by the input) into a user-facing MediaError. */
async function decoding<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof MediaError) throw err
    throw undecodable()
  }
}

/** RGB, white behind transparency, stretched to the square the classifier expects (it ignores aspect ratio too). */
async function toClassifierPixels(image: Sharp): Promise<Uint8Array> {
  const { data, info } = await image
    .resize(IMAGE_SIDE, IMAGE_SIDE, { fit: 'fill' })
    .flatten({ background: '#ffffff' })
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true })
  if (info.channels !== 3 || data.length !== IMAGE_BYTES) throw undecodable()
  return new Uint8Array(data.buffer, data.byteOffset, data.length)
}

/**
 * The perceptual hash of a picture, from the same pixels as the thumbnail (so it does not depend on the original's
 * size): sharp's raw output (8-bit) at the thumbnail's size; an animation's first frame.
 */
function hashOf(pixels: Buffer, px: { width: number; height: number; channels: number }): string | null {
  return perceptualHash(
    hashInput(new Uint8Array(pixels.buffer, pixels.byteOffset, pixels.length), px.width, px.height, px.channels),
  )
}

/** The hash of an encoded thumbnail (an animation's, whose first frame it reads). */
async function hashOfEncoded(thumbnail: Buffer): Promise<string | null> {
  const { data, info } = await sharp(thumbnail).raw().toBuffer({ resolveWithObject: true })
  return hashOf(data, info)
}

function checkPixels(width: number, height: number, maxPixels: number): void {
  if (width * height > maxPixels) throw new MediaError(exceedsMessage(maxPixels))
}

const still = { animated: false, frames: 1, filterPasses: 0 }

/**
 * An SVG's size, and what drawing it asks for (src/media/svg-work.ts): one whose elements, or whose thumbnail, would
 * take more than a picture's pixel work is refused before it is drawn.
 */
async function probeSvg(bytes: Uint8Array, maxPixels: number): Promise<ImageInfo> {
  const meta = await decoding(() => sharp(bytes, { limitInputPixels: false }).metadata())
  const { width, height } = meta
  if (!width || !height) throw undecodable()
  checkPixels(width, height, maxPixels)
  const work = svgWork(new TextDecoder().decode(bytes))
  const info: ImageInfo = { format: 'svg', width, height, ...still, filterPasses: work.filterPasses }
  const budget = workBudget(maxPixels)
  if (work.elements * SVG_ELEMENT_WORK > budget)
    throw new MediaError(
      `SVG too complex: it draws ${work.elements.toLocaleString('en')} elements once its references are followed`,
    )
  if (renderWork(info, THUMBNAIL_BOX, false) > budget)
    throw new MediaError(
      `SVG too complex: it runs ${work.filterPasses.toLocaleString('en')} filter passes once its references are followed`,
    )
  return info
}

const fitThumbnail = (image: Sharp) =>
  image.resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: 'inside', withoutEnlargement: true })
const encodeThumbnail = (image: Sharp) => image.webp({ quality: 80, effort: 4 })

const ENCODERS: Record<VariantSpec['format'], (image: Sharp) => Sharp> = {
  // The thumbnail's WebP settings: /cdn/medium is the thumbnail, and its other formats look the same.
  webp: encodeThumbnail,
  avif: (image) => image.avif({ quality: 50, effort: 2 }),
  jpg: (image) => image.flatten({ background: '#ffffff' }).jpeg({ quality: 82 }),
  png: (image) => image.png({ compressionLevel: 6 }),
}

/** An image's format, size and frames, from its header (a decoder of ours reads only what it needs). */
async function probe(path: string, format: ImageFormat, maxPixels: number): Promise<ImageInfo> {
  if (format === 'bmp') return { format, ...readBmpSize(await readHead(path, BMP_HEAD_BYTES)), ...still }
  if (format === 'ico') {
    const entry = largestIcoEntry(await readHead(path, DETECT_HEAD_BYTES))
    const { width, height } = icoEntrySize(await readHead(path, 40, entry.offset))
    return { format, width, height, ...still }
  }
  if (format === 'svg') return probeSvg(await Bun.file(path).bytes(), maxPixels)
  // Header-only read; the pixel limit is applied by us below so a bomb gets the right message.
  const meta = await decoding(() => sharp(path, { limitInputPixels: false }).metadata())
  const pages = meta.pages ?? 1
  const animated = (format === 'gif' || format === 'webp') && pages > 1
  // Orientation 5-8 swaps the sides; browsers and our thumbnails show the image turned upright. HEIF turns its
  // picture by its own properties (libheif's size already has them applied) and ignores an Exif Orientation.
  const upright = format === 'heic' ? meta : (meta.autoOrient ?? meta)
  const { width, height } = upright
  if (!width || !height) throw undecodable()
  if (animated && width * height * pages > workBudget(maxPixels)) {
    throw new MediaError('Animation has too many frames')
  }
  return { format, width, height, animated, frames: animated ? pages : 1, filterPasses: 0 }
}

/** Largest pixel buffer our own decoders (BMP, ICO) allocate unless told otherwise. */
const DEFAULT_MAX_DECODE_BYTES = 512 * 1024 * 1024

/** `maxDecodeBytes`: the largest RGBA buffer the BMP and ICO decoders may allocate, checked before allocating. */
export function createMediaProcessor(opts: { maxPixels: number; maxDecodeBytes?: number }): MediaProcessor {
  const { maxPixels, maxDecodeBytes = DEFAULT_MAX_DECODE_BYTES } = opts
  // libvips caches loads by file name: a temp path reused for another upload, or a file rewritten by metadata
  // stripping, would be read back stale. Every input here is decoded once, so the cache buys nothing.
  sharp.cache(false)
  // 'error' rejects truncated or corrupt pixel data but tolerates harmless warnings (e.g. a known-bad sRGB profile).
  const decodeOptions: SharpOptions = { failOn: 'error', sequentialRead: true, limitInputPixels: maxPixels }

  /**
   * A sharp pipeline over the image. Files go to sharp by path, except SVG: it goes as bytes so that, having no base
   * location, it cannot reach files next to it or anywhere else (`<image href="file:...">`, `<use>`, CSS urls), and
   * it is rendered straight at the scale of the output (`box`: the side it must fill, the thumbnail's unless told).
   * BMP, ICO and HEIC are decoded here (MediaError when they cannot be), HEIC with its rotation applied.
   */
  async function open(path: string, info: ImageInfo, allFrames: boolean, box = THUMBNAIL_SIZE): Promise<Sharp> {
    switch (info.format) {
      case 'bmp': {
        const img = decodeBmp(await Bun.file(path).bytes(), maxPixels, maxDecodeBytes)
        return sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } })
      }
      case 'ico': {
        const img = decodeIco(await Bun.file(path).bytes(), maxPixels, maxDecodeBytes)
        if ('png' in img) return sharp(img.png, decodeOptions)
        return sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } })
      }
      case 'heic': {
        const img = await decodeHeic(await Bun.file(path).bytes(), info, maxPixels, maxDecodeBytes)
        return sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } })
      }
      case 'svg': {
        const scale = Math.min(1, box / info.width, box / info.height)
        return sharp(await Bun.file(path).bytes(), { ...decodeOptions, density: Math.max(1, 72 * scale) })
      }
      default: {
        const animated = allFrames && info.animated
        return sharp(path, {
          ...decodeOptions,
          autoOrient: true,
          animated,
          limitInputPixels: animated ? workBudget(maxPixels) : maxPixels,
        })
      }
    }
  }

  async function renderThumbnail(path: string, info: ImageInfo) {
    const image = await open(path, info, true)
    return decoding(async () => {
      const { data, info: out } = await encodeThumbnail(fitThumbnail(image)).toBuffer({ resolveWithObject: true })
      return { data, width: out.width, height: out.pageHeight ?? out.height }
    })
  }

  /**
   * The thumbnail, the perceptual hash and (when asked for) the classifier's input from one decode: the original is
   * decoded and cut to the thumbnail's size as raw pixels once, and all are made from those (the classifier's input was
   * cut from the encoded thumbnail, decoded again: 7 ms of CPU per scanned 1080p upload). An animation's thumbnail keeps
   * every frame, so it is encoded from the decode directly and the others read its first frame.
   */
  async function renderAll(path: string, info: ImageInfo, early?: (classifierInput: Uint8Array) => void) {
    if (info.animated) {
      const thumb = await renderThumbnail(path, info)
      if (early) early(await decoding(() => toClassifierPixels(sharp(thumb.data))))
      return { ...thumb, phash: await decoding(() => hashOfEncoded(thumb.data)) }
    }
    const image = await open(path, info, false)
    return decoding(async () => {
      // 8-bit sRGB (sharp's default output), as the WebP encoder gets it, alpha kept.
      const { data: pixels, info: px } = await fitThumbnail(image).raw().toBuffer({ resolveWithObject: true })
      const raw = { raw: { width: px.width, height: px.height, channels: px.channels } }
      // The classifier's input first (~1 ms): the scan then runs while the thumbnail is encoded.
      if (early) early(await toClassifierPixels(sharp(pixels, raw)))
      const phash = hashOf(pixels, px)
      const data = await encodeThumbnail(sharp(pixels, raw)).toBuffer()
      return { data, width: px.width, height: px.height, phash }
    })
  }

  return {
    open,

    async inspect(path) {
      const format = detectFormat(await readHead(path, DETECT_HEAD_BYTES))
      if (!format) throw new MediaError('File is not a supported image')
      const probed = await probe(path, format, maxPixels)
      checkPixels(probed.width, probed.height, maxPixels)
      return probed
    },

    async thumbnail(path, info, destPath) {
      // Encoded to memory first so only decoding failures become MediaErrors, not a failing disk.
      const { data, width, height } = await renderThumbnail(path, info)
      await Bun.write(destPath, data)
      return { width, height }
    },

    async variant(path, info, spec, destPath) {
      // The server decides from the image's row; rows stored before it knew an animation's frames are caught here.
      const costly = tooCostly(info, spec, maxPixels)
      if (costly) throw new MediaError(costly)
      // libheif (AVIF) writes still images only: the other formats than WebP take the first frame.
      const image = await open(path, info, spec.format === 'webp', Math.max(spec.width, spec.height ?? 0))
      const { data, info: out } = await decoding(() =>
        ENCODERS[spec.format](
          image.resize(spec.width, spec.height, { fit: spec.fit, withoutEnlargement: true }),
        ).toBuffer({ resolveWithObject: true }),
      )
      await Bun.write(destPath, data)
      return { width: out.width, height: out.pageHeight ?? out.height }
    },

    async classifierInput(path, info) {
      const image = await open(path, info, false)
      return decoding(() => toClassifierPixels(image))
    },

    async thumbnailAndClassifierInput(path, info, destPath, early) {
      const { data, width, height, phash } = await renderAll(path, info, early)
      await Bun.write(destPath, data)
      return { width, height, phash }
    },

    async perceptualHash(path, info) {
      if (info.animated) return decoding(async () => hashOfEncoded((await renderThumbnail(path, info)).data))
      const image = await open(path, info, false)
      return decoding(async () => {
        const { data, info: px } = await fitThumbnail(image).raw().toBuffer({ resolveWithObject: true })
        return hashOf(data, px)
      })
    },
  }
}
