import { ascii, concat } from '../bytes'
import { type Cost, unsafe } from './cost'

/**
 * GIF: the file is walked block by block and written again from what is known to be picture: the header, the screen
 * descriptor, colour tables, image descriptors with their compressed data, graphic control (delay, disposal,
 * transparency), the NETSCAPE2.0/ANIMEXTS1.0 loop count and an ICC profile (ICCRGBG1012). Comments, plain text,
 * XMP and every other application extension, unknown extensions and anything after the trailer are dropped; both
 * modes alike, since a GIF carries no Exif. A file whose blocks cannot be walked to the end is refused.
 */

const IMAGE = 0x2c
const EXTENSION = 0x21
const TRAILER = 0x3b
const GRAPHIC_CONTROL = 0xf9
const APPLICATION = 0xff
const LOOP_APPS = new Set(['NETSCAPE2.0', 'ANIMEXTS1.0'])
const ICC_APP = 'ICCRGBG1012'

const cut = () => unsafe('a GIF cut off or with a block it does not know')

/** Bytes of the colour table a packed field announces (its top bit set), else 0. */
const colourTable = (packed: number) => (packed & 0x80 ? 3 << ((packed & 7) + 1) : 0)

/** Where the data sub-blocks starting at `at` end (after their zero terminator); throws when they run past the file. */
function subBlocksEnd(b: Uint8Array, at: number, cost: Cost): number {
  let pos = at
  while (pos < b.length && b[pos] !== 0) pos += 1 + b[pos]!
  cost.add(pos - at + 1)
  if (pos >= b.length) throw cut()
  return pos + 1
}

/**
 * The extension at `at` (its introducer) and where it ends; `keep` is its bytes as they go into the new file, or
 * null when it is dropped. Kept extensions are copied whole only when their layout is the expected one.
 */
function extension(b: Uint8Array, at: number, cost: Cost): { end: number; keep: Uint8Array | null } {
  if (at + 2 > b.length) throw cut()
  const label = b[at + 1]!
  const end = subBlocksEnd(b, at + 2, cost)
  const first = b[at + 2]!
  if (label === GRAPHIC_CONTROL) {
    // One 4-byte block, then the terminator.
    return { end, keep: first === 4 && end === at + 2 + 6 ? b.subarray(at, end) : null }
  }
  if (label !== APPLICATION || first !== 11) return { end, keep: null }
  const app = ascii(b, at + 3, 11)
  if (LOOP_APPS.has(app)) {
    // Only the loop sub-block (id 1, a 16-bit count); a buffering hint or anything else beside it goes.
    const data = at + 14
    if (b[data] !== 3 || b[data + 1] !== 1) return { end, keep: null }
    return { end, keep: concat([b.subarray(at, data + 4), new Uint8Array([0])]) }
  }
  return { end, keep: app === ICC_APP ? b.subarray(at, end) : null }
}

/** The rebuilt GIF (pixels and animation only), or null when the file has nothing else. */
export function stripGif(b: Uint8Array, _mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  if (b.length < 13) throw cut()
  const screenEnd = 13 + colourTable(b[10]!)
  if (screenEnd > b.length) throw cut()
  const parts: Uint8Array[] = [b.subarray(0, screenEnd)]
  let pos = screenEnd
  let changed = false
  for (;;) {
    if (pos >= b.length) {
      // No trailer: a file that ends between blocks (common on the web) gets one.
      parts.push(new Uint8Array([TRAILER]))
      changed = true
      break
    }
    const block = b[pos]!
    cost.add(1)
    if (block === TRAILER) {
      parts.push(b.subarray(pos, pos + 1))
      changed ||= pos + 1 < b.length
      break
    }
    if (block === IMAGE) {
      if (pos + 10 > b.length) throw cut()
      // Descriptor, local colour table, LZW code size, then the compressed data as sub-blocks.
      const data = pos + 10 + colourTable(b[pos + 9]!)
      if (data + 1 > b.length) throw cut()
      const end = subBlocksEnd(b, data + 1, cost)
      parts.push(b.subarray(pos, end))
      pos = end
    } else if (block === EXTENSION) {
      const { end, keep } = extension(b, pos, cost)
      if (keep) parts.push(keep)
      changed ||= keep?.length !== end - pos
      pos = end
    } else throw cut()
  }
  if (!changed) return null
  const out = concat(parts)
  cost.add(out.length)
  return out
}
