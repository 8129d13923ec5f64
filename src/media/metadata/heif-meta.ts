import { ascii, u16be, u32be } from '../bytes'
import { type Cost, find, unsafe } from './cost'
import { type Box, malformed, readBoxes, readUint } from './isobmff'

/**
 * The `meta` box of a HEIF file read whole: its items (iinf), where their bytes lie (iloc), their properties (iprp)
 * and references (iref). Anything it cannot read whole is refused: the picture itself is described here.
 */

export interface Item {
  id: number
  type: string
  /** infe flags (bit 0: hidden) and the box itself, reused when it is already what would be written. */
  flags: number
  version: number
  protection: number
  infe: Box
  /** The end of the item name (after its NUL), for 'mime' and others: what follows it. */
  nameEnd: number
}

export interface Extent {
  index: number
  offset: number
  length: number
}

export interface Location {
  id: number
  method: number
  dataRef: number
  base: number
  extents: Extent[]
}

export interface IlocLayout {
  version: number
  offsetSize: number
  lengthSize: number
  baseSize: number
  indexSize: number
}

export interface Association {
  essential: boolean
  index: number
}

export interface Reference {
  type: string
  from: number
  to: number[]
}

export interface Meta {
  box: Box
  children: Box[]
  primary: number
  items: Map<number, Item>
  /** In iloc's order. */
  locations: Location[]
  iloc: IlocLayout
  properties: Box[]
  /** ipma's version and flags, and each item's associations in its order. */
  ipma: { version: number; flags: number; entries: { id: number; associations: Association[] }[] }
  iref: { version: number; references: Reference[] }
  idat: Box | undefined
}

/** Boxes a meta box may hold once; a second of them would let readers disagree on what the file holds. */
const SINGLE = ['hdlr', 'pitm', 'iloc', 'iinf', 'iprp', 'iref', 'idat', 'dinf']

export function readMeta(b: Uint8Array, meta: Box, cost: Cost): Meta {
  if (meta.body + 4 > meta.end) throw malformed()
  const children = readBoxes(b, meta.body + 4, meta.end, true, cost)
  const one = new Map<string, Box>()
  for (const child of children) {
    if (!SINGLE.includes(child.type)) continue
    if (one.has(child.type)) throw unsafe(`two ${child.type} boxes in a HEIF meta box`)
    one.set(child.type, child)
  }
  const [hdlr, pitm, iinf, iloc] = ['hdlr', 'pitm', 'iinf', 'iloc'].map((t) => one.get(t))
  if (!hdlr || !pitm || !iinf || !iloc) throw malformed('a HEIF meta box without its items')
  if (hdlr.body + 12 > hdlr.end || ascii(b, hdlr.body + 8, 4) !== 'pict') throw malformed('a HEIF file of no picture')
  if (pitm.body + 6 > pitm.end) throw malformed()
  const primary = b[pitm.body] === 0 ? u16be(b, pitm.body + 4) : readUint(b, pitm.body + 4, 4)
  const iprp = one.get('iprp')
  const { properties, ipma } = iprp ? readProperties(b, iprp, cost) : { properties: [], ipma: emptyIpma() }
  const iref = one.get('iref')
  return {
    box: meta,
    children,
    primary,
    items: readItems(b, iinf, cost),
    ...readLocations(b, iloc, cost),
    properties,
    ipma,
    iref: iref ? readReferences(b, iref, cost) : { version: 0, references: [] },
    idat: one.get('idat'),
  }
}

const emptyIpma = () => ({ version: 0, flags: 0, entries: [] })

function readItems(b: Uint8Array, iinf: Box, cost: Cost): Map<number, Item> {
  const items = new Map<number, Item>()
  const first = iinf.body + 4 + (b[iinf.body] === 0 ? 2 : 4)
  if (first > iinf.end) throw malformed()
  for (const infe of readBoxes(b, first, iinf.end, true, cost)) {
    if (infe.type !== 'infe') continue
    const version = b[infe.body]!
    const head = infe.body + 4 + (version === 3 ? 4 : 2) + 2 + (version >= 2 ? 4 : 0)
    if (head > infe.end) throw malformed()
    const id = version === 3 ? u32be(b, infe.body + 4) : u16be(b, infe.body + 4)
    const at = infe.body + 4 + (version === 3 ? 4 : 2)
    // Versions 0 and 1 name no item type: such an item is nothing this rebuild keeps.
    const type = version >= 2 ? ascii(b, at + 2, 4) : ''
    const nul = find(b.subarray(0, infe.end), 0, head, cost)
    if (items.has(id)) throw unsafe('two HEIF items with one id')
    items.set(id, {
      id,
      type,
      flags: (b[infe.body + 1]! << 16) | u16be(b, infe.body + 2),
      version,
      protection: u16be(b, at),
      infe,
      nameEnd: nul < 0 ? infe.end : nul + 1,
    })
  }
  return items
}

function readLocations(b: Uint8Array, iloc: Box, cost: Cost): { locations: Location[]; iloc: IlocLayout } {
  const version = b[iloc.body]!
  if (version > 2) throw malformed()
  let at = iloc.body + 4
  if (at + 2 + (version < 2 ? 2 : 4) > iloc.end) throw malformed()
  const layout: IlocLayout = {
    version,
    offsetSize: b[at]! >> 4,
    lengthSize: b[at]! & 15,
    baseSize: b[at + 1]! >> 4,
    indexSize: version > 0 ? b[at + 1]! & 15 : 0,
  }
  at += 2
  const count = version < 2 ? u16be(b, at) : u32be(b, at)
  at += version < 2 ? 2 : 4
  const idSize = version < 2 ? 2 : 4
  const extentSize = layout.indexSize + layout.offsetSize + layout.lengthSize
  const locations: Location[] = []
  const seen = new Set<number>()
  for (let i = 0; i < count; i++) {
    const head = idSize + (version > 0 ? 2 : 0) + 2 + layout.baseSize + 2
    if (at + head > iloc.end) throw malformed()
    cost.add(head)
    const id = readUint(b, at, idSize)
    at += idSize
    const method = version > 0 ? u16be(b, at) & 15 : 0
    if (version > 0) at += 2
    const dataRef = u16be(b, at)
    const base = readUint(b, at + 2, layout.baseSize)
    at += 2 + layout.baseSize
    const n = u16be(b, at)
    at += 2
    if (at + n * extentSize > iloc.end) throw malformed()
    if (seen.has(id)) throw unsafe('two HEIF locations for one item')
    seen.add(id)
    const extents: Extent[] = []
    for (let e = 0; e < n; e++) {
      extents.push({
        index: readUint(b, at, layout.indexSize),
        offset: readUint(b, at + layout.indexSize, layout.offsetSize),
        length: readUint(b, at + layout.indexSize + layout.offsetSize, layout.lengthSize),
      })
      at += extentSize
    }
    cost.add(n * extentSize)
    locations.push({ id, method, dataRef, base, extents })
  }
  return { locations, iloc: layout }
}

function readProperties(b: Uint8Array, iprp: Box, cost: Cost): Pick<Meta, 'properties' | 'ipma'> {
  const children = readBoxes(b, iprp.body, iprp.end, true, cost)
  const ipcos = children.filter((c) => c.type === 'ipco')
  const ipmas = children.filter((c) => c.type === 'ipma')
  if (ipcos.length > 1 || ipmas.length > 1) throw unsafe('two HEIF property boxes')
  const properties = ipcos[0] ? readBoxes(b, ipcos[0].body, ipcos[0].end, true, cost) : []
  const box = ipmas[0]
  if (!box) return { properties, ipma: emptyIpma() }
  const version = b[box.body]!
  const flags = (b[box.body + 1]! << 16) | u16be(b, box.body + 2)
  const idSize = version < 1 ? 2 : 4
  const indexSize = flags & 1 ? 2 : 1
  let at = box.body + 8
  if (at > box.end) throw malformed()
  const count = u32be(b, box.body + 4)
  const entries: Meta['ipma']['entries'] = []
  const seen = new Set<number>()
  for (let i = 0; i < count; i++) {
    if (at + idSize + 1 > box.end) throw malformed()
    const id = readUint(b, at, idSize)
    const n = b[at + idSize]!
    at += idSize + 1
    if (at + n * indexSize > box.end) throw malformed()
    if (seen.has(id)) throw unsafe('two HEIF property lists for one item')
    seen.add(id)
    const associations: Association[] = []
    for (let k = 0; k < n; k++) {
      const v = readUint(b, at, indexSize)
      const top = indexSize === 2 ? 0x8000 : 0x80
      associations.push({ essential: (v & top) !== 0, index: v & (top - 1) })
      at += indexSize
    }
    cost.add(idSize + 1 + n * indexSize)
    entries.push({ id, associations })
  }
  return { properties, ipma: { version, flags, entries } }
}

function readReferences(b: Uint8Array, iref: Box, cost: Cost): Meta['iref'] {
  const version = b[iref.body]!
  const idSize = version === 0 ? 2 : 4
  const references: Reference[] = []
  for (const ref of readBoxes(b, iref.body + 4, iref.end, true, cost)) {
    if (ref.body + idSize + 2 > ref.end) throw malformed()
    const from = readUint(b, ref.body, idSize)
    const n = u16be(b, ref.body + idSize)
    const first = ref.body + idSize + 2
    if (first + n * idSize > ref.end) throw malformed()
    const to: number[] = []
    for (let k = 0; k < n; k++) to.push(readUint(b, first + k * idSize, idSize))
    cost.add(n * idSize)
    references.push({ type: ref.type, from, to })
  }
  return { version, references }
}
