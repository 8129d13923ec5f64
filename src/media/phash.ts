/**
 * The perceptual hash of a picture: a 64-bit DCT hash (pHash). The picture is reduced to 32x32 grey levels, its 2-D
 * DCT taken, and of the 8x8 lowest frequencies after the average (rows and columns 1-8) each bit says whether that
 * coefficient is above their median. Resizing, re-encoding, a small crop or a change of brightness move only a few
 * bits; another picture differs in about half of them. Written as 16 lowercase hex digits.
 */

/** The grey image the hash is taken from: PHASH_SIDE x PHASH_SIDE, one byte a pixel. */
export const PHASH_SIDE = 32
const LOW = 8

/**
 * Below this spread of the 64 coefficients (root mean square, in grey levels) the picture has no shape to speak of (a
 * flat colour, a fine pattern that averages out to grey): its bits would be noise, matching other such pictures at
 * random, so it gets no hash and is matched by its bytes alone (as PDQ drops low-quality hashes).
 */
export const MIN_STRUCTURE = 2

/** The rows or columns of the source each of PHASH_SIDE cells averages: all of them when shrinking, one when growing. */
function cells(size: number): Int32Array {
  const bounds = new Int32Array(PHASH_SIDE + 1)
  for (let c = 0; c <= PHASH_SIDE; c++) bounds[c] = Math.floor((c * size) / PHASH_SIDE)
  return bounds
}

/**
 * The grey pixels the hash is taken from, made from 8-bit pixels (1 to 4 channels: grey, grey and alpha, RGB, RGBA)
 * in plain code rather than a second libvips pipeline (that one cost 3-7 ms of an upload's CPU): white behind
 * transparency, as a page shows it; luma (Rec. 601); each of the 32x32 cells the mean of the pixels it covers, or the
 * one pixel under it for a side under 32. One pass over the pixels.
 */
export function hashInput(pixels: Uint8Array, width: number, height: number, channels: number): Uint8Array {
  if (pixels.length < width * height * channels || channels < 1 || channels > 4)
    throw new Error('hashInput: 8-bit pixels of 1 to 4 channels expected')
  const N = PHASH_SIDE
  const xs = cells(width)
  const ys = cells(height)
  const colour = channels >= 3
  const alpha = channels === 2 || channels === 4
  const grey = new Uint8Array(N * N)
  for (let cy = 0; cy < N; cy++) {
    const y0 = ys[cy]
    const y1 = Math.max(y0 + 1, ys[cy + 1])
    for (let cx = 0; cx < N; cx++) {
      const x0 = xs[cx]
      const x1 = Math.max(x0 + 1, xs[cx + 1])
      let sum = 0
      for (let y = y0; y < y1; y++)
        for (let x = x0, at = (y * width + x0) * channels; x < x1; x++, at += channels) {
          const luma = colour ? 0.299 * pixels[at] + 0.587 * pixels[at + 1] + 0.114 * pixels[at + 2] : pixels[at]
          const a = alpha ? pixels[at + channels - 1] / 255 : 1
          sum += luma * a + 255 * (1 - a)
        }
      grey[cy * N + cx] = Math.round(sum / ((y1 - y0) * (x1 - x0)))
    }
  }
  return grey
}

/** cos((2x + 1) u pi / 2N) for u < LOW, x < N: the only DCT terms the hash reads. */
const COS = (() => {
  const table = new Float64Array((LOW + 1) * PHASH_SIDE)
  for (let u = 0; u <= LOW; u++)
    for (let x = 0; x < PHASH_SIDE; x++)
      table[u * PHASH_SIDE + x] = Math.cos(((2 * x + 1) * u * Math.PI) / (2 * PHASH_SIDE))
  return table
})()

/** The hash of 32x32 grey pixels, or null when the picture has too little structure to hash (MIN_STRUCTURE). */
export function perceptualHash(grey: Uint8Array): string | null {
  if (grey.length !== PHASH_SIDE * PHASH_SIDE) throw new Error('perceptualHash: 32x32 grey pixels expected')
  const N = PHASH_SIDE
  // Rows first (N x 9 coefficients per row), then columns: only the low frequencies are ever computed.
  const rows = new Float64Array(N * (LOW + 1))
  for (let y = 0; y < N; y++)
    for (let u = 0; u <= LOW; u++) {
      let sum = 0
      for (let x = 0; x < N; x++) sum += grey[y * N + x] * COS[u * N + x]
      rows[y * (LOW + 1) + u] = sum
    }
  const coefficients = new Float64Array(LOW * LOW)
  for (let v = 1; v <= LOW; v++)
    for (let u = 1; u <= LOW; u++) {
      let sum = 0
      for (let y = 0; y < N; y++) sum += rows[y * (LOW + 1) + u] * COS[v * N + y]
      // Orthonormal scale (2/N for u, v > 0): coefficients in grey levels, whatever N is.
      coefficients[(v - 1) * LOW + (u - 1)] = (sum * 2) / N
    }
  const rms = Math.sqrt(coefficients.reduce((s, c) => s + c * c, 0) / coefficients.length)
  if (rms < MIN_STRUCTURE) return null
  const sorted = [...coefficients].sort((a, b) => a - b)
  const median = (sorted[31] + sorted[32]) / 2
  let hex = ''
  for (let nibble = 0; nibble < 16; nibble++) {
    let value = 0
    for (let bit = 0; bit < 4; bit++) value = (value << 1) | (coefficients[nibble * 4 + bit] > median ? 1 : 0)
    hex += value.toString(16)
  }
  return hex
}

/** A hash as its two 32-bit halves (high, low). */
export function hashHalves(hex: string): [number, number] {
  return [Number.parseInt(hex.slice(0, 8), 16) >>> 0, Number.parseInt(hex.slice(8, 16), 16) >>> 0]
}

export function popcount32(n: number): number {
  let v = n >>> 0
  v -= (v >>> 1) & 0x55555555
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333)
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24
}

/** How many of the 64 bits differ. */
export function hammingDistance(a: string, b: string): number {
  const [ah, al] = hashHalves(a)
  const [bh, bl] = hashHalves(b)
  return popcount32(ah ^ bh) + popcount32(al ^ bl)
}

/** A hash as written by operators and hash lists: 16 hex digits (a 0x prefix and upper case accepted). */
export function parseHash(text: string): string | null {
  const hex = text.trim().toLowerCase().replace(/^0x/, '')
  return /^[0-9a-f]{16}$/.test(hex) ? hex : null
}
