import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import sharp from 'sharp'
import { seededRandom } from '../../test/fixtures'

/**
 * Photo-like pixels: smooth colour fields (random low-resolution colours upscaled) plus per-pixel grain, so encoders
 * and decoders work about as hard as on a photograph (flat synthetic images would compress and decode unrealistically fast).
 */
async function photoLike(width: number, height: number, seed: number, grain: number): Promise<Buffer> {
  const rand = seededRandom(seed)
  const lw = Math.max(2, Math.round(width / 48))
  const lh = Math.max(2, Math.round(height / 48))
  const base = Buffer.alloc(lw * lh * 3)
  for (let i = 0; i < base.length; i++) base[i] = Math.floor(rand() * 256)
  const pixels = await sharp(base, { raw: { width: lw, height: lh, channels: 3 } })
    .resize(width, height, { kernel: 'cubic' })
    .raw()
    .toBuffer()
  for (let i = 0; i < pixels.length; i++) {
    const v = pixels[i] + (rand() - 0.5) * 2 * grain
    pixels[i] = v < 0 ? 0 : Math.min(v, 255)
  }
  return pixels
}

/** A square PNG of pure RGB noise: PNG cannot compress it, so the file holds side x side x 3 bytes and a little. */
async function noisePng(path: string, side: number, seed: number) {
  const rand = seededRandom(seed)
  const pixels = Buffer.alloc(side * side * 3)
  for (let i = 0; i < pixels.length; i += 4) {
    const v = (rand() * 4294967296) >>> 0
    pixels[i] = v & 0xff
    pixels[i + 1] = (v >>> 8) & 0xff
    pixels[i + 2] = (v >>> 16) & 0xff
    if (i + 3 < pixels.length) pixels[i + 3] = v >>> 24
  }
  await sharp(pixels, { raw: { width: side, height: side, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toFile(path)
}

export interface Fixtures {
  /** ~200 KB JPEG (the 194 KB file). */
  smallJpeg: string
  /** ~2 MB JPEG. */
  largeJpeg: string
  /** 1920x1080 PNG. */
  png1080: string
  /** 4000x3000 JPEG. */
  jpeg12mp: string
  /** 640x480 JPEG for the classification latency (small, so the scan dominates the request). */
  scanJpeg: string
  /** ~50 MB PNG (uncompressible noise) for the memory batch. */
  png50mb: string
  /** ~6 MB PNG of noise (1414x1414): an upload whose bytes cost more than its decode (receiving, hashing, writing). */
  png6mb: string
  /** 96x64 JPEG of a few KB: the scale group's source of a million rows, whose backup holds every file. */
  tinyJpeg: string
}

const VERSION = 'v1'

/** Generates the benchmark images once into `dir` (kept between runs: same names, same bytes). */
export async function ensureFixtures(dir: string): Promise<Fixtures> {
  mkdirSync(dir, { recursive: true })
  const f: Fixtures = {
    smallJpeg: join(dir, `small-${VERSION}.jpg`),
    largeJpeg: join(dir, `large-${VERSION}.jpg`),
    png1080: join(dir, `1080p-${VERSION}.png`),
    jpeg12mp: join(dir, `12mp-${VERSION}.jpg`),
    scanJpeg: join(dir, `scan-${VERSION}.jpg`),
    png50mb: join(dir, `50mb-${VERSION}.png`),
    png6mb: join(dir, `6mb-${VERSION}.png`),
    tinyJpeg: join(dir, `tiny-${VERSION}.jpg`),
  }
  const make = async (path: string, build: () => Promise<unknown>) => {
    if (!existsSync(path)) await build()
  }
  const raw = (w: number, h: number) => ({ raw: { width: w, height: h, channels: 3 as const } })
  await make(f.smallJpeg, async () =>
    sharp(await photoLike(1280, 853, 1, 11), raw(1280, 853))
      .jpeg({ quality: 85 })
      .toFile(f.smallJpeg),
  )
  await make(f.largeJpeg, async () =>
    sharp(await photoLike(3000, 2000, 2, 14), raw(3000, 2000))
      .jpeg({ quality: 92 })
      .toFile(f.largeJpeg),
  )
  await make(f.png1080, async () =>
    sharp(await photoLike(1920, 1080, 3, 3), raw(1920, 1080))
      .png({ adaptiveFiltering: true })
      .toFile(f.png1080),
  )
  await make(f.jpeg12mp, async () =>
    sharp(await photoLike(4000, 3000, 4, 12), raw(4000, 3000))
      .jpeg({ quality: 92 })
      .toFile(f.jpeg12mp),
  )
  await make(f.scanJpeg, async () =>
    sharp(await photoLike(640, 480, 5, 8), raw(640, 480))
      .jpeg({ quality: 85 })
      .toFile(f.scanJpeg),
  )
  await make(f.tinyJpeg, async () =>
    sharp(await photoLike(96, 64, 7, 8), raw(96, 64))
      .jpeg({ quality: 80 })
      .toFile(f.tinyJpeg),
  )
  await make(f.png50mb, () => noisePng(f.png50mb, 4000, 6))
  await make(f.png6mb, () => noisePng(f.png6mb, 1414, 8))
  return f
}
