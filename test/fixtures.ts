import sharp from 'sharp'

export type Bytes = Uint8Array<ArrayBuffer>

/** A small seeded generator (mulberry32) of numbers in [0, 1): the same seed gives the same bytes on every run. */
export function seededRandom(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Real images made with sharp, so tests never depend on binary files in the repo. */
export async function makeImage(
  format: 'png' | 'jpeg' | 'webp' | 'gif' | 'tiff' | 'avif',
  width = 64,
  height = 48,
  seed = 0,
): Promise<Bytes> {
  const channels = 3
  const pixels = Buffer.alloc(width * height * channels)
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 7 + seed * 31 + ((i / channels / width) | 0) * 3) & 0xff
  const img = sharp(pixels, { raw: { width, height, channels } })
  const out = format === 'jpeg' ? img.jpeg({ quality: 90 }) : img.toFormat(format)
  return new Uint8Array(await out.toBuffer())
}

/** A PNG of random noise: it does not compress, so its size is predictable (about 3 bytes a pixel). */
export async function makeNoisePng(side: number): Promise<Bytes> {
  const pixels = Buffer.from(crypto.getRandomValues(new Uint8Array(side * side * 3)))
  return new Uint8Array(
    await sharp(pixels, { raw: { width: side, height: side, channels: 3 } })
      .png()
      .toBuffer(),
  )
}

/** An animated GIF of `frames` solid-colour frames. */
export async function makeAnimatedGif(width: number, height: number, frames: number): Promise<Bytes> {
  const pages = await Promise.all(
    Array.from({ length: frames }, (_, i) =>
      sharp({ create: { width, height, channels: 4, background: { r: (i * 80) % 256, g: 40 * i, b: 200 } } })
        .png()
        .toBuffer(),
    ),
  )
  return new Uint8Array(
    await sharp(pages, { join: { animated: true } })
      .gif({ loop: 0, delay: 100 })
      .toBuffer(),
  )
}

/** GIF LZW data (the GIF89a specification, appendix F) of `pixels`, colour indices below 2^`minCode`, as data sub-blocks. */
function gifLzw(pixels: Uint8Array, minCode: number): number[] {
  const codes: number[] = []
  const clear = 1 << minCode
  let size = minCode + 1
  let next = clear + 2
  let table = new Map<number, number>()
  let bits = 0
  let held = 0
  const emit = (code: number) => {
    held |= code << bits
    bits += size
    for (; bits >= 8; bits -= 8, held >>>= 8) codes.push(held & 0xff)
  }
  emit(clear)
  let current = pixels[0]!
  for (let i = 1; i < pixels.length; i++) {
    const key = (current << 8) | pixels[i]!
    const known = table.get(key)
    if (known !== undefined) {
      current = known
      continue
    }
    emit(current)
    if (next === 4096) {
      emit(clear)
      next = clear + 2
      size = minCode + 1
      table = new Map()
    } else {
      if (next >= 1 << size) size++
      table.set(key, next++)
    }
    current = pixels[i]!
  }
  emit(current)
  emit(clear + 1)
  if (bits > 0) codes.push(held & 0xff)
  const blocks = [minCode]
  for (let i = 0; i < codes.length; i += 255) {
    const part = codes.slice(i, i + 255)
    blocks.push(part.length, ...part)
  }
  blocks.push(0)
  return blocks
}

/**
 * Issue 33's accepted bomb: an animated GIF of `frames` frames on a `side` x `side` canvas in a few bytes a frame. The
 * first frame fills the canvas with a checkerboard (LZW packs it small); each later one is a single pixel in a
 * corner, the other corner restored to the background, so every frame differs from the last across the canvas. At
 * 1000 frames of 1000x1000 it is 26 KB, exactly the pixel work an upload may make its decoder do (1000 megapixels).
 */
export function makeFrameBombGif(side: number, frames: number): Bytes {
  const out: number[] = [...new TextEncoder().encode('GIF89a')]
  const u16 = (n: number) => out.push(n & 0xff, n >> 8)
  u16(side)
  u16(side)
  out.push(0x80, 0, 0, 0, 0, 0, 255, 255, 255) // a global table of two colours
  out.push(0x21, 0xff, 0x0b, ...new TextEncoder().encode('NETSCAPE2.0'), 3, 1, 0, 0, 0)
  const checkerboard = new Uint8Array(side * side).map((_, i) => ((i % side) + Math.floor(i / side)) & 1)
  const first = gifLzw(checkerboard, 2)
  const dots = [gifLzw(new Uint8Array([0]), 2), gifLzw(new Uint8Array([1]), 2)]
  for (let i = 0; i < frames; i++) {
    // A graphic control extension: after the first frame, each is restored to the background after its 20 ms.
    out.push(0x21, 0xf9, 4, i === 0 ? 0 : 0x08, 2, 0, 0, 0)
    const corner = i === 0 ? 0 : (i % 2) * (side - 1)
    out.push(0x2c)
    u16(corner)
    u16(corner)
    u16(i === 0 ? side : 1)
    u16(i === 0 ? side : 1)
    out.push(0, ...(i === 0 ? first : dots[i % 2]!))
  }
  out.push(0x3b)
  return new Uint8Array(out)
}

export const svgImage = (width = 120, height = 80, extra = '') =>
  new TextEncoder().encode(
    `<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#3b82f6"/>${extra}</svg>`,
  )

export interface UploadPart {
  bytes: Bytes
  name?: string
  type?: string
}

/** A multipart body with one `file` part per entry plus the given text fields. */
export function uploadForm(files: UploadPart[], fields: Record<string, string> = {}): FormData {
  const form = new FormData()
  for (const [key, value] of Object.entries(fields)) form.append(key, value)
  for (const [i, f] of files.entries()) {
    form.append('file', new Blob([f.bytes], { type: f.type ?? 'application/octet-stream' }), f.name ?? `image${i}.png`)
  }
  return form
}

/** A 24-bit bottom-up BMP (BITMAPINFOHEADER), which sharp cannot write. */
export function makeBmp(width: number, height: number): Bytes {
  const rowSize = Math.ceil((width * 3) / 4) * 4
  const size = 54 + rowSize * height
  const buf = Buffer.alloc(size)
  buf.write('BM', 0, 'latin1')
  buf.writeUInt32LE(size, 2)
  buf.writeUInt32LE(54, 10)
  buf.writeUInt32LE(40, 14)
  buf.writeInt32LE(width, 18)
  buf.writeInt32LE(height, 22)
  buf.writeUInt16LE(1, 26)
  buf.writeUInt16LE(24, 28)
  buf.writeUInt32LE(rowSize * height, 34)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = 54 + y * rowSize + x * 3
      buf[o] = (x * 4) & 0xff
      buf[o + 1] = (y * 4) & 0xff
      buf[o + 2] = 128
    }
  }
  return new Uint8Array(buf)
}

/** An ICO file holding one PNG entry (the modern form of favicons). */
export async function makeIco(size = 32): Promise<Bytes> {
  const png = Buffer.from(await makeImage('png', size, size))
  const header = Buffer.alloc(22)
  header.writeUInt16LE(0, 0)
  header.writeUInt16LE(1, 2)
  header.writeUInt16LE(1, 4)
  header[6] = size >= 256 ? 0 : size
  header[7] = size >= 256 ? 0 : size
  header.writeUInt16LE(1, 10)
  header.writeUInt16LE(32, 12)
  header.writeUInt32LE(png.length, 14)
  header.writeUInt32LE(22, 18)
  return new Uint8Array(Buffer.concat([header, png]))
}

/** A decompression bomb: refused from its header, never decoded. */
export async function makeDecompressionBomb(): Promise<Bytes> {
  // A real, valid PNG: 20000x20000 (400 megapixels) of 1-bit black, whose 50 MB of scanlines deflate to ~50 KB.
  const { crc32, deflateSync } = await import('node:zlib')
  const side = 20000
  const rowBytes = 1 + side / 8 // filter byte + 1 bit per pixel
  const chunk = (type: string, data: Uint8Array) => {
    const out = Buffer.alloc(12 + data.length)
    out.writeUInt32BE(data.length, 0)
    out.write(type, 4, 'ascii')
    out.set(data, 8)
    out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)) >>> 0, 8 + data.length)
    return out
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(side, 0)
  header.writeUInt32BE(side, 4)
  header[8] = 1 // bit depth
  header[9] = 0 // greyscale
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  const pixels = deflateSync(Buffer.alloc(rowBytes * side), { level: 9 })
  return new Uint8Array(
    Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', pixels), chunk('IEND', new Uint8Array(0))]),
  )
}

/** A body of `count` chunks of `size` zero bytes, sent with no Content-Length: only counting while reading can bound it. */
export function chunkedBody(size: number, count: number): ReadableStream<Uint8Array> {
  let sent = 0
  return new ReadableStream({
    pull(controller) {
      controller.enqueue(new Uint8Array(size))
      if (++sent === count) controller.close()
    },
  })
}

/** Bodies that send their first bytes and then nothing, until `release()` (after each test) ends them. */
export function stallingBodies() {
  const held: ReadableStreamDefaultController<Uint8Array>[] = []
  return {
    body(prefix: Uint8Array): ReadableStream<Uint8Array> {
      return new ReadableStream({
        start(controller) {
          controller.enqueue(prefix)
          held.push(controller)
        },
      })
    },
    release() {
      for (const controller of held.splice(0)) {
        try {
          controller.close()
        } catch {
          // already cancelled by the reader's abort
        }
      }
    },
  }
}
