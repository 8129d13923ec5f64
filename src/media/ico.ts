import { decodeDib, type RgbaImage, readDibHeader } from './bmp'
import { u16le, u32be, u32le } from './bytes'
import { isPng } from './detect'
import { MediaError } from './errors'

export interface IcoEntry {
  /** Byte range of the entry's image inside the file. */
  offset: number
  size: number
  /** Size announced by the directory (0 there means 256). */
  width: number
  height: number
  bpp: number
}

/** Reads the directory (it sits in the file's first bytes) and returns the largest entry, the one we show. */
export function largestIcoEntry(head: Uint8Array): IcoEntry {
  const count = u16le(head, 4)
  if (6 + count * 16 > head.length) throw new MediaError('Image could not be decoded')
  let best: IcoEntry | null = null
  for (let i = 0; i < count; i++) {
    const e = 6 + i * 16
    const entry: IcoEntry = {
      width: head[e] || 256,
      height: head[e + 1] || 256,
      bpp: u16le(head, e + 6),
      size: u32le(head, e + 8),
      offset: u32le(head, e + 12),
    }
    const area = entry.width * entry.height
    const bestArea = best ? best.width * best.height : -1
    if (!best || area > bestArea || (area === bestArea && entry.bpp > best.bpp)) best = entry
  }
  if (!best || best.size === 0) throw new MediaError('Image could not be decoded')
  return best
}

/**
 * The real size of an entry comes from its own header (the directory's bytes cap at 256 and are often wrong).
 * `start` needs the entry's first 40 bytes.
 */
export function icoEntrySize(start: Uint8Array): { width: number; height: number; png: boolean } {
  if (isPng(start)) {
    if (start.length < 24) throw new MediaError('Image could not be decoded')
    return { width: u32be(start, 16), height: u32be(start, 20), png: true }
  }
  const { width, height } = readDibHeader(start, 0, true)
  return { width, height, png: false }
}

/** The bytes of the largest entry: a PNG to hand to sharp, or a DIB decoded here to RGBA (limits as `decodeDib`). */
export function decodeIco(file: Uint8Array, maxPixels: number, maxBytes: number): { png: Uint8Array } | RgbaImage {
  const entry = largestIcoEntry(file)
  if (entry.offset + entry.size > file.length) throw new MediaError('Image could not be decoded')
  const data = file.subarray(entry.offset, entry.offset + entry.size)
  return isPng(data) ? { png: data } : decodeDib(data, 0, null, true, maxPixels, maxBytes)
}
