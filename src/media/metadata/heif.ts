import { ascii, concat, startsWith, u32be } from '../bytes'
import { type Cost, unsafe } from './cost'
import { type IlocLayout, type Item, type Location, type Meta, readMeta } from './heif-meta'
import { type Box, box, boxHeader, fits, fullBox, malformed, readBoxes, Writer } from './isobmff'
import { Splice } from './splice'
import { cleanExif } from './tiff'

/**
 * AVIF and HEIC (both HEIF). The file is written again from its picture: `ftyp`, a new `meta` box and one `mdat`
 * holding only the bytes of the image items kept, with every iloc offset rewritten. Kept: the coded image items
 * (tiles, grids, overlays, thumbnails, alpha, depth and gain maps), the properties they use that are known to
 * describe pixels (size, colour and ICC, codec configuration, rotation/mirror, crop, HDR levels, auxiliary type) and
 * the references between them; under 'gps' also the Exif item of the primary picture, rebuilt from a whitelist
 * (cleanExif). Dropped: every other item (XMP `mime`, `uri `, Exif under 'all', other Exif items, JPEG-coded items
 * whose own segments could carry metadata, unknown types), item names, unknown or text properties, other meta boxes,
 * and every top-level box but `ftyp`, `meta` and `mdat` (`uuid` XMP, `free`, and `moov`: a sequence keeps its still
 * primary picture, its animation track is dropped). Refused: a second meta, iinf, iloc or ipco box, a primary picture
 * that cannot be kept, an essential property it does not know, image data outside the file or in another file.
 */

/** Item types whose payload is coded pixels or a description of how to compose them. */
const IMAGE_ITEMS = new Set(['av01', 'hvc1', 'vvc1', 'avc1', 'grid', 'iovl', 'iden', 'unci', 'tmap'])

/**
 * Properties kept. Those of a fixed layout are written with exactly their fields (their box size, or a function of
 * the first field byte): bytes a writer put after them go. Those of variable layout (codec configuration, colour,
 * auxiliary type) are kept as they are; null.
 */
const PROPERTIES: Record<string, number | ((first: number) => number) | null> = {
  ispe: 20,
  irot: 9,
  imir: 9,
  pasp: 16,
  clli: 12,
  mdcv: 32,
  amve: 16,
  a1op: 9,
  lsel: 10,
  rloc: 20,
  clap: 40,
  ccst: 16,
  a1lx: (flags) => (flags & 1 ? 21 : 15),
  pixi: null,
  colr: null,
  av1C: null,
  hvcC: null,
  vvcC: null,
  avcC: null,
  auxC: null,
  uncC: null,
  cmpd: null,
  cclv: null,
}

/** References kept between kept items: derived images' inputs, thumbnails, auxiliary images, premultiplied alpha. */
const REFERENCES = new Set(['dimg', 'thmb', 'auxl', 'base', 'prem'])

/** Brands of image sequences: once the track is dropped, a file naming one is taken for a sequence without it. */
const SEQUENCE_BRANDS = new Set(['msf1', 'avis', 'hevc', 'hevx', 'hevm', 'hevs'])
const STILL_BRANDS = new Set(['mif1', 'avif', 'heic', 'heix', 'heim', 'heis'])

/**
 * The ftyp of the still file: sequence brands removed (libheif refuses a file that names one and has no moov), the
 * major brand replaced by the still one it also names; null when it names none.
 */
function stillFtyp(b: Uint8Array, ftyp: Box): Uint8Array | null {
  if (ftyp.body + 8 > ftyp.end) throw malformed()
  const brands: string[] = []
  for (let at = ftyp.body + 8; at + 4 <= ftyp.end; at += 4) brands.push(ascii(b, at, 4))
  const major = ascii(b, ftyp.body, 4)
  if (!SEQUENCE_BRANDS.has(major) && !brands.some((brand) => SEQUENCE_BRANDS.has(brand))) return null
  const kept = brands.filter((brand) => !SEQUENCE_BRANDS.has(brand))
  if (!kept.some((brand) => STILL_BRANDS.has(brand))) kept.push('mif1')
  const still = SEQUENCE_BRANDS.has(major) ? (['avif', 'heic'].find((brand) => kept.includes(brand)) ?? 'mif1') : major
  const w = new Writer().fourcc(still).bytes(b.subarray(ftyp.body + 4, ftyp.body + 8))
  for (const brand of kept) w.fourcc(brand)
  return box('ftyp', w.done())
}

const EXIF_PREFIX = [0x45, 0x78, 0x69, 0x66, 0, 0] // "Exif\0\0"

/** The hdlr and dinf boxes written: a picture handler without a name; one data reference, this file. */
const HDLR = fullBox('hdlr', 0, 0, new Writer().uint(4, 0).fourcc('pict').uint(12, 0).uint(1, 0).done())
const DINF = box(
  'dinf',
  fullBox(
    'dref',
    0,
    0,
    new Writer()
      .uint(4, 1)
      .bytes(fullBox('url ', 0, 1, new Uint8Array()))
      .done(),
  ),
)

/** An item's bytes where they lie in the original file. */
type Range = [number, number]

interface Plan {
  kept: Set<number>
  /** The new payload of the Exif item, when it changed (it goes at the end of the new mdat). */
  exif: { id: number; data: Uint8Array } | null
  /** Kept properties: old index (1-based) -> new index. */
  properties: Map<number, number>
  ranges: Map<number, Range[]>
}

export function stripHeif(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  const top = readBoxes(b, 0, b.length, false, cost)
  if (top[0]?.type !== 'ftyp') throw malformed('a HEIF file that does not start with ftyp')
  const metas = top.filter((t) => t.type === 'meta')
  if (metas.length > 1) throw unsafe('two HEIF meta boxes')
  if (!metas[0]) throw unsafe('a HEIF image sequence without a still picture')
  const meta = readMeta(b, metas[0], cost)
  const plan = planItems(b, meta, mode, cost)
  return writeFile(b, top, meta, plan, cost)
}

/**
 * Where an item's bytes lie in the file: null when they lie elsewhere (another file, other items), 'cut' when they run
 * past the end of the file or of idat.
 */
function rangesOf(b: Uint8Array, meta: Meta, loc: Location, cost: Cost): Range[] | 'cut' | null {
  if (loc.dataRef !== 0 || loc.method > 1) return null
  const container = loc.method === 0 ? { body: 0, end: b.length } : meta.idat
  if (!container) return null
  cost.add(loc.extents.length)
  const ranges: Range[] = []
  for (const e of loc.extents) {
    const start = container.body + loc.base + e.offset
    const end = e.length === 0 ? container.end : start + e.length
    if (start > end || end > container.end) return 'cut'
    ranges.push([start, end])
  }
  return ranges
}

const CUT = 'a HEIF picture cut off by the end of the file'

function planItems(b: Uint8Array, meta: Meta, mode: 'gps' | 'all', cost: Cost): Plan {
  const locations = new Map(meta.locations.map((l) => [l.id, l]))
  const ranges = new Map<number, Range[]>()
  const kept = new Set<number>()
  const cut = new Set<number>()
  for (const item of meta.items.values()) {
    if (!IMAGE_ITEMS.has(item.type) || item.protection !== 0) continue
    const loc = locations.get(item.id)
    const r = loc ? rangesOf(b, meta, loc, cost) : []
    if (r === 'cut') cut.add(item.id)
    if (!r || r === 'cut') continue
    ranges.set(item.id, r)
    kept.add(item.id)
  }
  if (!kept.has(meta.primary)) throw unsafe(cut.has(meta.primary) ? CUT : 'a HEIF primary picture that cannot be kept')
  for (const ref of meta.iref.references) {
    const lost = ref.type === 'dimg' && kept.has(ref.from) ? ref.to.find((id) => !kept.has(id)) : undefined
    if (lost !== undefined) throw unsafe(cut.has(lost) ? CUT : 'a HEIF picture built from items that cannot be kept')
  }

  const exif = mode === 'gps' ? primaryExif(b, meta, locations, cost) : null
  if (exif) {
    kept.add(exif.id)
    ranges.set(exif.id, exif.ranges)
  }

  const properties = new Map<number, number>()
  for (const { id, associations } of meta.ipma.entries) {
    if (!kept.has(id)) continue
    for (const { essential, index } of associations) {
      if (index === 0) continue
      const prop = meta.properties[index - 1]
      if (!prop) throw malformed()
      if (propertyBytes(b, prop)) properties.set(index, 0)
      else if (essential) throw unsafe(`an essential HEIF property it does not know (${prop.type})`)
    }
  }
  let next = 1
  for (const index of [...properties.keys()].sort((x, y) => x - y)) properties.set(index, next++)
  return { kept, exif: exif?.data ? { id: exif.id, data: exif.data } : null, properties, ranges }
}

/** A kept property's bytes as they are written (its fields only), or null when it is not one it keeps. */
function propertyBytes(b: Uint8Array, prop: Box): Uint8Array | null {
  const rule = PROPERTIES[prop.type]
  if (rule === undefined || prop.body !== prop.start + 8) return null
  const size = prop.end - prop.start
  const whole = b.subarray(prop.start, prop.end)
  if (rule === null) {
    if (prop.type === 'colr') {
      const kind = ascii(b, prop.body, 4)
      if (kind === 'nclx') return size >= 19 ? box('colr', b.subarray(prop.body, prop.body + 11)) : null
      return kind === 'rICC' || kind === 'prof' ? whole : null
    }
    // pixi: a full box, a channel count, one depth per channel.
    if (prop.type !== 'pixi') return whole
    const expected = 13 + (b[prop.body + 4] ?? 0)
    return size < expected
      ? null
      : size === expected
        ? whole
        : box('pixi', b.subarray(prop.body, prop.start + expected))
  }
  const expected = typeof rule === 'number' ? rule : rule(b[prop.body] ?? 0)
  if (size < expected) return null
  return size === expected ? whole : box(prop.type, b.subarray(prop.body, prop.start + expected))
}

/**
 * The Exif item that describes the primary picture (a `cdsc` reference to it), rebuilt by cleanExif: its ranges when
 * the rebuild is the same bytes, else its new payload. Null when there is none or nothing of it is kept.
 */
function primaryExif(b: Uint8Array, meta: Meta, locations: Map<number, Location>, cost: Cost) {
  const ref = meta.iref.references.find(
    (r) => r.type === 'cdsc' && r.to.includes(meta.primary) && meta.items.get(r.from)?.type === 'Exif',
  )
  const item = ref && meta.items.get(ref.from)
  const loc = item && item.protection === 0 ? locations.get(item.id) : undefined
  const ranges = loc && rangesOf(b, meta, loc, cost)
  if (!item || !ranges || ranges === 'cut') return null
  const payload = concat(ranges.map(([s, e]) => b.subarray(s, e)))
  cost.add(payload.length)
  if (payload.length < 4) return null
  // A TIFF header at the offset the item gives (after an "Exif\0\0" some writers count, some do not).
  let tiff = 4 + u32be(payload, 0)
  if (startsWith(payload, EXIF_PREFIX, tiff)) tiff += 6
  if (tiff > payload.length) return null
  const clean = cleanExif(payload.subarray(tiff), 'gps', cost)
  if (!clean) return null
  const data = concat([new Uint8Array([0, 0, 0, 6]), new Uint8Array(EXIF_PREFIX), clean])
  const same = data.length === payload.length && Buffer.from(data).equals(Buffer.from(payload))
  return { id: item.id, ranges: same ? ranges : [], data: same ? null : data }
}

/** Kept byte ranges merged in file order, and where each lands in the new container (`at` + its offset in there). */
class Packing {
  readonly segments: Range[] = []
  private starts: number[] = []
  /** Bytes of the kept ranges together. */
  readonly length: number
  constructor(ranges: Range[], cost: Cost) {
    cost.add(ranges.length * Math.ceil(Math.log2(ranges.length + 1)))
    for (const [s, e] of [...ranges].sort((x, y) => x[0] - y[0])) {
      const last = this.segments[this.segments.length - 1]
      if (last && s <= last[1]) last[1] = Math.max(last[1], e)
      else this.segments.push([s, e])
    }
    let at = 0
    for (const [s, e] of this.segments) {
      this.starts.push(at)
      at += e - s
    }
    this.length = at
  }
  /** The new offset of an old position that lies in a kept range. */
  map(pos: number): number {
    let lo = 0
    let hi = this.segments.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (this.segments[mid]![0] <= pos) lo = mid
      else hi = mid - 1
    }
    return this.starts[lo]! + pos - this.segments[lo]![0]
  }
  bytes(b: Uint8Array): Uint8Array {
    return concat(this.segments.map(([s, e]) => b.subarray(s, e)))
  }
}

interface NewLocation {
  id: number
  method: number
  base: number
  extents: { index: number; offset: number; length: number }[]
}

function writeFile(b: Uint8Array, top: Box[], meta: Meta, plan: Plan, cost: Cost): Uint8Array | null {
  const kept = meta.locations.filter((l) => plan.kept.has(l.id))
  const method = (l: Location) => (plan.exif?.id === l.id ? 0 : l.method)
  const inFile = new Packing(
    kept.filter((l) => method(l) === 0).flatMap((l) => plan.ranges.get(l.id)!),
    cost,
  )
  const inIdat = new Packing(
    kept.filter((l) => method(l) === 1).flatMap((l) => plan.ranges.get(l.id)!),
    cost,
  )
  const exifData = plan.exif?.data ?? new Uint8Array()
  const mdatLength = inFile.length + exifData.length
  const idat = inIdat.bytes(b)
  const mdatHead = mdatLength + 8 > 0xffffffff ? 16 : 8
  const firstMdat = top.findIndex((t) => t.type === 'mdat')
  const ftyp = stillFtyp(b, top[0]!)

  /**
   * The new file around a given iloc box: written into `out` when given (the kept bytes are copied once, there), else
   * only measured. Returns where the mdat payload starts and where the file ends.
   */
  const assemble = (iloc: Uint8Array, out?: Splice) => {
    const metaBox = writeMeta(b, meta, plan, iloc, idat)
    let length = 0
    let mdatAt = -1
    const putMdat = () => {
      mdatAt = length + mdatHead
      length += mdatHead + mdatLength
      if (!out) return
      out.add(boxHeader('mdat', mdatLength))
      for (const [s, e] of inFile.segments) out.copy(s, e)
      out.add(exifData)
    }
    top.forEach((t, i) => {
      if (i === 0) {
        if (ftyp) out?.add(ftyp)
        else out?.copy(t.start, t.end)
        length += ftyp ? ftyp.length : t.end - t.start
      } else if (t === meta.box) {
        out?.add(metaBox)
        length += metaBox.length
      } else if (i === firstMdat) putMdat()
    })
    if (mdatAt < 0 && mdatLength > 0) putMdat()
    return { mdatAt, fileEnd: length }
  }

  const locate = (mdatAt: number, fileEnd: number): NewLocation[] =>
    kept.map((l) => {
      if (plan.exif?.id === l.id) {
        const at = mdatAt + inFile.length
        return { id: l.id, method: 0, base: 0, extents: [{ index: 0, offset: at, length: plan.exif.data.length }] }
      }
      const packing = l.method === 0 ? inFile : inIdat
      const shift = l.method === 0 ? mdatAt : 0
      const containerEnd = l.method === 0 ? fileEnd : idat.length
      const extents = plan.ranges.get(l.id)!.map(([s, e], k) => {
        const at = shift + packing.map(s)
        // A length of 0 means "to the end of the container": kept so while it still holds.
        const length = l.extents[k]!.length === 0 && at + e - s === containerEnd ? 0 : e - s
        return { index: l.extents[k]!.index, offset: at, length }
      })
      return { id: l.id, method: l.method, base: 0, extents }
    })

  let layout = meta.iloc
  for (let attempt = 0; ; attempt++) {
    const { mdatAt, fileEnd } = assemble(writeIloc(layout, locate(0, 0), kept))
    const located = rebase(locate(mdatAt, fileEnd), kept, layout)
    if (located) {
      const out = new Splice(b)
      assemble(writeIloc(layout, located, kept), out)
      return out.result(cost)
    }
    if (attempt > 0) throw malformed()
    layout = { ...layout, offsetSize: 8, lengthSize: 8, baseSize: 0 }
  }
}

/**
 * Offsets written as the original wrote them: relative to a base offset when the layout has one (moved by as much as
 * the item's first extent moved), else absolute. Null when a value does not fit the layout's field sizes.
 */
function rebase(located: NewLocation[], old: Location[], layout: IlocLayout): NewLocation[] | null {
  return located.every((loc, i) => {
    const first = old[i]!.extents[0]
    if (layout.baseSize > 0 && loc.extents.length > 0) {
      loc.base = loc.extents[0]!.offset - (first && loc.extents.length === old[i]!.extents.length ? first.offset : 0)
      if (loc.base < 0) loc.base = 0
      for (const e of loc.extents) e.offset -= loc.base
    }
    return (
      fits(loc.base, layout.baseSize) &&
      loc.extents.every(
        (e) =>
          fits(e.offset, layout.offsetSize) &&
          (layout.offsetSize > 0 || e.offset === 0) &&
          fits(e.length, layout.lengthSize) &&
          (layout.lengthSize > 0 || e.length === 0) &&
          fits(e.index, layout.indexSize),
      )
    )
  })
    ? located
    : null
}

function writeIloc(layout: IlocLayout, located: NewLocation[], old: Location[]): Uint8Array {
  const { version, offsetSize, lengthSize, baseSize, indexSize } = layout
  const w = new Writer()
    .uint(1, (offsetSize << 4) | lengthSize)
    .uint(1, (baseSize << 4) | (version > 0 ? indexSize : 0))
    .uint(version < 2 ? 2 : 4, located.length)
  located.forEach((loc, i) => {
    w.uint(version < 2 ? 2 : 4, loc.id)
    if (version > 0) w.uint(2, loc.method)
    w.uint(2, old[i]!.dataRef).uint(baseSize, loc.base).uint(2, loc.extents.length)
    for (const e of loc.extents) {
      if (version > 0) w.uint(indexSize, e.index)
      w.uint(offsetSize, e.offset).uint(lengthSize, e.length)
    }
  })
  return fullBox('iloc', version, 0, w.done())
}

/** The new meta box: its kept children in their order, each written from what is kept. */
function writeMeta(b: Uint8Array, meta: Meta, plan: Plan, iloc: Uint8Array, idat: Uint8Array): Uint8Array {
  const children: Uint8Array[] = []
  for (const child of meta.children) {
    const writers: Record<string, () => Uint8Array | null> = {
      hdlr: () => HDLR,
      pitm: () => b.subarray(child.start, child.end),
      iloc: () => iloc,
      iinf: () => writeIinf(b, child, meta, plan),
      iprp: () => writeIprp(b, meta, plan),
      iref: () => writeIref(meta, plan),
      idat: () => (idat.length > 0 ? box('idat', idat) : null),
      dinf: () => DINF,
    }
    const written = writers[child.type]?.()
    if (written) children.push(written)
  }
  return fullBox('meta', b[meta.box.body]!, 0, concat(children))
}

function writeIinf(b: Uint8Array, iinf: Box, meta: Meta, plan: Plan): Uint8Array {
  const items = [...meta.items.values()].filter((item) => plan.kept.has(item.id))
  const version = b[iinf.body]!
  const w = new Writer().uint(version === 0 ? 2 : 4, items.length)
  for (const item of items) w.bytes(writeInfe(item))
  return fullBox('iinf', version, 0, w.done())
}

/** An item's infe without its name: id, no protection, type. */
const writeInfe = (item: Item) =>
  fullBox(
    'infe',
    item.version,
    item.flags & 1,
    new Writer()
      .uint(item.version === 3 ? 4 : 2, item.id)
      .uint(2, 0)
      .fourcc(item.type)
      .uint(1, 0)
      .done(),
  )

function writeIprp(b: Uint8Array, meta: Meta, plan: Plan): Uint8Array {
  const ipco = concat(
    [...plan.properties.keys()].map((index) => {
      return propertyBytes(b, meta.properties[index - 1]!)!
    }),
  )
  const { version, flags, entries } = meta.ipma
  const wide = flags & 1
  const kept = entries
    .filter((e) => plan.kept.has(e.id))
    .map((e) => ({ id: e.id, associations: e.associations.filter((a) => plan.properties.has(a.index)) }))
    .filter((e) => e.associations.length > 0)
  const w = new Writer().uint(4, kept.length)
  for (const { id, associations } of kept) {
    w.uint(version < 1 ? 2 : 4, id).uint(1, associations.length)
    for (const a of associations) {
      const index = plan.properties.get(a.index)!
      w.uint(wide ? 2 : 1, (a.essential ? (wide ? 0x8000 : 0x80) : 0) | index)
    }
  }
  return box('iprp', concat([box('ipco', ipco), fullBox('ipma', version, flags, w.done())]))
}

function writeIref(meta: Meta, plan: Plan): Uint8Array | null {
  const { version, references } = meta.iref
  const idSize = version === 0 ? 2 : 4
  const refs: Uint8Array[] = []
  const exif = [...plan.kept].find((id) => meta.items.get(id)?.type === 'Exif')
  for (const ref of references) {
    const known = REFERENCES.has(ref.type) || (ref.type === 'cdsc' && ref.from === exif)
    const to = ref.to.filter((id) => plan.kept.has(id))
    if (!known || !plan.kept.has(ref.from) || to.length === 0) continue
    const w = new Writer().uint(idSize, ref.from).uint(2, to.length)
    for (const id of to) w.uint(idSize, id)
    refs.push(box(ref.type, w.done()))
  }
  return refs.length > 0 ? fullBox('iref', version, 0, concat(refs)) : null
}
