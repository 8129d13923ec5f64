import { type Cost, find, findSeq, unsafe } from './cost'

const LT = 0x3c
const GT = 0x3e
const SLASH = 0x2f
const EQ = 0x3d
const COLON = 0x3a
const QUOTE = 0x22
const APOS = 0x27
const BANG = 0x21
const QMARK = 0x3f
const SPACE = 0x20

const COMMENT = [0x21, 0x2d, 0x2d] // !--
const COMMENT_END = [0x2d, 0x2d, 0x3e] // -->
const CDATA = [0x21, 0x5b, 0x43, 0x44, 0x41, 0x54, 0x41, 0x5b] // ![CDATA[
const CDATA_END = [0x5d, 0x5d, 0x3e] // ]]>
const PI_END = [0x3f, 0x3e] // ?>

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d
const isNameEnd = (c: number | undefined) => c === undefined || isSpace(c) || c === GT || c === SLASH || c === EQ

function at(b: Uint8Array, i: number, seq: readonly number[]): boolean {
  for (let k = 0; k < seq.length; k++) if (b[i + k] !== seq[k]) return false
  return true
}

/** Whether the local part (after the last ':') of the name at [start, end) begins with "gps" in any case. */
function isGpsName(b: Uint8Array, start: number, end: number): boolean {
  let local = start
  for (let i = start; i < end; i++) if (b[i] === COLON) local = i + 1
  return (
    end - local >= 3 &&
    (b[local]! | 0x20) === 0x67 &&
    (b[local + 1]! | 0x20) === 0x70 &&
    (b[local + 2]! | 0x20) === 0x73
  )
}

/**
 * Replaces, in place and with spaces, every XML element and attribute whose local name starts with GPS (any case:
 * exif:GPSLatitude, drone-dji:GpsLongitude): same length, so nothing around it moves. One forward pass: markup is
 * found with indexOf, names and attributes are read once, a GPS element is blanked when its end tag closes it.
 * Returns whether anything was blanked. Malformed text just ends the pass; `hasGpsName` then decides.
 */
function blankGps(b: Uint8Array, cost: Cost): boolean {
  const n = b.length
  let changed = false
  let depth = 0
  let blankFrom = -1 // start of the open GPS element being blanked
  let blankDepth = 0
  const blank = (from: number, to: number) => {
    b.fill(SPACE, from, to)
    cost.add(to - from)
    changed = true
  }
  let i = 0
  scan: while (i < n) {
    const lt = find(b, LT, i, cost)
    if (lt < 0) break
    i = lt + 1
    const c = b[i]
    if (c === BANG || c === QMARK) {
      // Comments, CDATA, processing instructions and declarations are skipped whole.
      const [close, from] = at(b, i, COMMENT)
        ? [COMMENT_END, i + 3]
        : at(b, i, CDATA)
          ? [CDATA_END, i + 8]
          : c === QMARK
            ? [PI_END, i + 1]
            : [[GT], i]
      const end = findSeq(b, close, from, cost)
      if (end < 0) break
      i = end + close.length
      continue
    }
    if (c === SLASH) {
      const gt = find(b, GT, i, cost)
      if (gt < 0) break
      depth--
      if (blankFrom >= 0 && depth === blankDepth) {
        blank(blankFrom, gt + 1)
        blankFrom = -1
      }
      i = gt + 1
      continue
    }
    const nameStart = i
    while (!isNameEnd(b[i])) i++
    cost.add(i - nameStart)
    const gpsElement = blankFrom < 0 && isGpsName(b, nameStart, i)
    let selfClosing = false
    for (;;) {
      const from = i
      while (isSpace(b[i])) i++
      cost.add(i - from)
      if (i >= n) break scan
      if (b[i] === GT) {
        i++
        break
      }
      if (b[i] === SLASH) {
        i++
        if (b[i] === GT) {
          selfClosing = true
          i++
          break
        }
        continue
      }
      const attrStart = i
      while (!isNameEnd(b[i])) i++
      const attrEnd = i
      while (isSpace(b[i])) i++
      cost.add(i - attrStart)
      if (b[i] !== EQ) continue
      i++
      while (isSpace(b[i])) i++
      const quote = b[i]
      if (quote !== QUOTE && quote !== APOS) continue
      const close = find(b, quote, i + 1, cost)
      if (close < 0) break scan
      if (blankFrom < 0 && !gpsElement && isGpsName(b, attrStart, attrEnd)) blank(attrStart, close + 1)
      i = close + 1
    }
    if (gpsElement) {
      if (selfClosing) blank(lt, i)
      else {
        blankFrom = lt
        blankDepth = depth
      }
    }
    if (!selfClosing) depth++
  }
  return changed
}

/**
 * Whether "gps" (any case) follows ':' or '<' anywhere, NUL bytes ignored (so UTF-16 and UTF-32 text is read too):
 * where a property or element named GPS* could still be, for any reader however lenient.
 */
export function hasGpsName(b: Uint8Array, cost: Cost): boolean {
  cost.add(b.length)
  let state = 0 // 1: after ':' or '<', 2: then 'g', 3: then 'p'
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!
    if (c === 0) continue
    if (c === COLON || c === LT) state = 1
    else if (state === 1 && (c | 0x20) === 0x67) state = 2
    else if (state === 2 && (c | 0x20) === 0x70) state = 3
    else if (state === 3 && (c | 0x20) === 0x73) return true
    else state = 0
  }
  return false
}

/**
 * Removes GPS properties from an XMP packet (or any text that may hold one) in place, with spaces. Throws the
 * refusal when a GPS name remains that the pass could not remove (malformed markup, UTF-16, a comment). Returns
 * whether the bytes changed.
 */
export function scrubXmp(b: Uint8Array, cost: Cost): boolean {
  const changed = blankGps(b, cost)
  if (hasGpsName(b, cost)) throw unsafe('a GPS property in XMP could not be removed')
  return changed
}

/** Blanks a whole XMP packet (STRIP_METADATA=all where it cannot be dropped): spaces read as no metadata at all. */
export function blankXmp(b: Uint8Array, cost: Cost): boolean {
  b.fill(SPACE)
  cost.add(b.length)
  return b.length > 0
}
