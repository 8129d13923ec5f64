import sharp from 'sharp'

/** Flat-colour cartoon (sun, house, tree) as a PNG file: what the model calls a drawing. */
export async function drawingPng(): Promise<Uint8Array<ArrayBuffer>> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300">
    <rect width="400" height="300" fill="#ffffff"/>
    <circle cx="330" cy="60" r="35" fill="#ffd200" stroke="#000" stroke-width="4"/>
    <rect x="60" y="140" width="150" height="120" fill="#e05050" stroke="#000" stroke-width="4"/>
    <polygon points="45,140 135,70 225,140" fill="#7040a0" stroke="#000" stroke-width="4"/>
    <rect x="115" y="195" width="40" height="65" fill="#60a0ff" stroke="#000" stroke-width="4"/>
    <rect x="280" y="170" width="25" height="90" fill="#8b5a2b" stroke="#000" stroke-width="4"/>
    <circle cx="292" cy="150" r="45" fill="#30b030" stroke="#000" stroke-width="4"/>
    <line x1="0" y1="262" x2="400" y2="262" stroke="#000" stroke-width="4"/>
  </svg>`
  return new Uint8Array(await sharp(Buffer.from(svg)).png().toBuffer())
}

/** Photo-like landscape (sky gradient over noisy grass, deterministic noise) as a JPEG file. */
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
      const rgb = y < horizon ? [90 + (y / horizon) * 100, 150 + (y / horizon) * 70, 235] : [30 + noise(20), 130 + noise(40), 30 + noise(15)]
      for (let c = 0; c < 3; c++) pixels[i + c] = Math.max(0, Math.min(255, rgb[c] + noise(8)))
    }
  }
  return new Uint8Array(await sharp(pixels, { raw: { width, height, channels: 3 } }).blur(0.8).jpeg({ quality: 90 }).toBuffer())
}
