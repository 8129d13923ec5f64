import { u16le, u32le } from '../bytes'
import { isPng } from '../detect'
import { type Cost, unsafe } from './cost'
import { stripPng } from './png'

const HEADER = 6
const ENTRY = 16

/**
 * An ICO (or CUR) written again from its directory and the images it names: a PNG image goes through stripPng (a
 * PNG inside an icon carries text chunks and eXIf like any other, and can be taken out and opened as one); a DIB
 * (BMP without its file header) carries no metadata and is copied as it is. Bytes no entry names (between images,
 * after the last) are dropped. Returns null when nothing changed. Throws the refusal when the directory cannot be
 * read whole: no entries, an image past the end of the file or over the directory, two images overlapping.
 */
export function stripIco(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  const count = b.length >= HEADER ? u16le(b, 4) : 0
  const dirEnd = HEADER + count * ENTRY
  if (count === 0 || dirEnd > b.length) throw unsafe('an icon directory that cannot be read')
  cost.add(dirEnd)
  const images: { start: number; end: number; entry: number }[] = []
  for (let i = 0; i < count; i++) {
    const entry = HEADER + i * ENTRY
    const start = u32le(b, entry + 12)
    const end = start + u32le(b, entry + 8)
    if (start < dirEnd || end > b.length || end <= start) throw unsafe('an icon image outside the file')
    images.push({ start, end, entry })
  }
  const byStart = [...images].sort((x, y) => x.start - y.start)
  for (let i = 1; i < byStart.length; i++) {
    if (byStart[i]!.start < byStart[i - 1]!.end) throw unsafe('icon images that overlap')
  }
  let changed = false
  const data = images.map(({ start, end }) => {
    const image = b.subarray(start, end)
    const clean = isPng(image) ? stripPng(image.slice(), mode, cost) : null
    changed ||= clean !== null
    return clean ?? image
  })
  // The layout as written here: the directory, then each image in entry order, nothing between or after.
  let at = dirEnd
  const laidOut = images.every(({ start, end }) => {
    const same = start === at
    at = end
    return same
  })
  if (!changed && laidOut && at === b.length) return null
  const size = dirEnd + data.reduce((sum, d) => sum + d.length, 0)
  const out = new Uint8Array(size)
  out.set(b.subarray(0, dirEnd))
  const view = new DataView(out.buffer)
  let offset = dirEnd
  data.forEach((d, i) => {
    const entry = images[i]!.entry
    view.setUint32(entry + 8, d.length, true)
    view.setUint32(entry + 12, offset, true)
    out.set(d, offset)
    offset += d.length
  })
  cost.add(size)
  return out
}
