import sharp from 'sharp'

/**
 * A flat cartoon: a pixel-art mushroom (black outlines, flat red, white and skin fills on sky blue), 16x16 cells of
 * 25 px as a 400x400 PNG. What the real model calls a drawing, by a wide margin (Drawing ~0.97 on wasm, also through
 * the upload's WebP thumbnail and as a JPEG). Simpler flat drawings (a house, a face, a town) were tried: the model
 * calls them Neutral.
 */
export async function drawingPng(): Promise<Uint8Array<ArrayBuffer>> {
  const rows = [
    '................',
    '.....KKKKKK.....',
    '...KKRRRRWWKK...',
    '..KWWRRRRWWWWK..',
    '.KWWRRRRRRWWWWK.',
    '.KRRRWWWWRRRWWK.',
    'KRRRWWWWWWRRRRRK',
    'KRRRWWWWWWRRRRRK',
    'KWRRWWWWWWRRRWWK',
    'KWWRRWWWWRRRRWWK',
    '.KKKKKKKKKKKKKK.',
    '...KSSKSSKSSK...',
    '...KSSKSSKSSK...',
    '...KSSSSSSSSK...',
    '....KSSSSSSK....',
    '.....KKKKKK.....',
  ]
  const colours: Record<string, number[]> = {
    '.': [120, 190, 255],
    K: [0, 0, 0],
    R: [230, 40, 40],
    W: [255, 255, 255],
    S: [250, 220, 180],
  }
  const cell = 25
  const side = rows.length * cell
  const pixels = new Uint8Array(side * side * 3)
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) pixels.set(colours[rows[(y / cell) | 0][(x / cell) | 0]], (y * side + x) * 3)
  }
  return new Uint8Array(
    await sharp(pixels, { raw: { width: side, height: side, channels: 3 } })
      .png()
      .toBuffer(),
  )
}

/** Photo-like landscape (sky gradient over noisy grass, deterministic noise) as a JPEG file: Neutral (~0.99) to the model. */
export async function landscapeJpeg(): Promise<Uint8Array<ArrayBuffer>> {
  const width = 320
  const height = 240
  const pixels = new Uint8Array(width * height * 3)
  let seed = 42
  const noise = (amplitude: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return ((seed / 0x7fffffff) * 2 - 1) * amplitude
  }
  const horizon = height * 0.6
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3
      const rgb =
        y < horizon
          ? [90 + (y / horizon) * 100, 150 + (y / horizon) * 70, 235]
          : [30 + noise(20), 130 + noise(40), 30 + noise(15)]
      for (let c = 0; c < 3; c++) pixels[i + c] = Math.max(0, Math.min(255, rgb[c] + noise(8)))
    }
  }
  return new Uint8Array(
    await sharp(pixels, { raw: { width, height, channels: 3 } })
      .blur(0.8)
      .jpeg({ quality: 90 })
      .toBuffer(),
  )
}
