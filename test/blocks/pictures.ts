import sharp from 'sharp'
import { type Bytes, seededRandom } from '../fixtures'

const colour = (r: () => number) => `rgb(${Math.floor(r() * 256)},${Math.floor(r() * 256)},${Math.floor(r() * 256)})`

/**
 * A distinct picture for `seed`: a gradient in a random direction, random shapes (circles, rectangles, polygons), on
 * some seeds lines of text-like marks, and grain. 640x480 unless told.
 */
export async function picture(seed: number, width = 640, height = 480): Promise<Bytes> {
  const r = seededRandom(seed * 7919 + 1)
  const angle = r() * 360
  const parts: string[] = [
    `<defs><linearGradient id="g" gradientTransform="rotate(${angle.toFixed(0)} .5 .5)"><stop offset="0" stop-color="${colour(r)}"/><stop offset="1" stop-color="${colour(r)}"/></linearGradient></defs>`,
    `<rect width="${width}" height="${height}" fill="url(#g)"/>`,
  ]
  const shapes = 3 + Math.floor(r() * 6)
  for (let i = 0; i < shapes; i++) {
    const x = r() * width
    const y = r() * height
    const size = (0.08 + r() * 0.3) * Math.min(width, height)
    const kind = Math.floor(r() * 3)
    if (kind === 0) parts.push(`<circle cx="${x}" cy="${y}" r="${size / 2}" fill="${colour(r)}"/>`)
    else if (kind === 1)
      parts.push(
        `<rect x="${x - size / 2}" y="${y - size / 3}" width="${size}" height="${size * 0.66}" fill="${colour(r)}"/>`,
      )
    else {
      const points = Array.from(
        { length: 3 + Math.floor(r() * 3) },
        () => `${x + (r() - 0.5) * size * 2},${y + (r() - 0.5) * size * 2}`,
      )
      parts.push(`<polygon points="${points.join(' ')}" fill="${colour(r)}"/>`)
    }
  }
  if (seed % 3 === 0) {
    // Text-like: lines of short dark marks, as a scanned page or a screenshot has.
    const top = r() * height * 0.5
    for (let line = 0; line < 6; line++) {
      let x = 20 + r() * 40
      while (x < width - 40) {
        const w = 6 + r() * 30
        parts.push(`<rect x="${x}" y="${top + line * 22}" width="${w}" height="10" fill="#111"/>`)
        x += w + 5 + r() * 6
      }
    }
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${parts.join('')}</svg>`
  const base = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer({ resolveWithObject: true })
  // Grain: photo-like, and different from seed to seed.
  const grain = 6 + r() * 18
  const data = base.data
  for (let i = 0; i < data.length; i++) data[i] = Math.max(0, Math.min(255, data[i]! + (r() - 0.5) * grain))
  return new Uint8Array(
    await sharp(data, { raw: { width: base.info.width, height: base.info.height, channels: base.info.channels } })
      .jpeg({ quality: 90 })
      .toBuffer(),
  )
}

/** The copies of a picture an abuser would try after its removal (the crops centred: docs/api.md, Blocked pictures, says why). */
export async function copies(original: Bytes): Promise<Record<string, Bytes>> {
  const { width, height } = await sharp(original).metadata()
  const w = width!
  const h = height!
  const crop = (part: number) => ({
    left: Math.round((w * part) / 2),
    top: Math.round((h * part) / 2),
    width: Math.round(w * (1 - part)),
    height: Math.round(h * (1 - part)),
  })
  const made: Record<string, Buffer> = {
    'resized 70% at quality 70': await sharp(original)
      .resize(Math.round(w * 0.7))
      .jpeg({ quality: 70 })
      .toBuffer(),
    WebP: await sharp(original).webp({ quality: 75 }).toBuffer(),
    PNG: await sharp(original).png().toBuffer(),
    'cropped 4% (2% a side)': await sharp(original).extract(crop(0.04)).jpeg({ quality: 85 }).toBuffer(),
    'cropped 5% (2.5% a side)': await sharp(original).extract(crop(0.05)).jpeg({ quality: 85 }).toBuffer(),
    'brightened 8%': await sharp(original).modulate({ brightness: 1.08 }).jpeg({ quality: 85 }).toBuffer(),
    'brightened 10%': await sharp(original).modulate({ brightness: 1.1 }).jpeg({ quality: 85 }).toBuffer(),
    'darkened 10%': await sharp(original).modulate({ brightness: 0.9 }).jpeg({ quality: 85 }).toBuffer(),
  }
  return Object.fromEntries(Object.entries(made).map(([name, bytes]) => [name, new Uint8Array(bytes)]))
}
