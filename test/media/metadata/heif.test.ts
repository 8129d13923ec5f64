import { beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { detectFormat } from '../../../src/media/detect'
import { readTagsOf } from '../exiftool'
import { heifEnc, secondPrimary, turnedHeic } from '../heic-files'
import { bytes, concat, GPS, hasLatitudeBytes, photo, XMP_WITH_GPS } from '../hostile-files'
import {
  type Bytes,
  CAMERA_TAGS,
  contains,
  exiftoolWrite,
  GPS_TAGS,
  isoBox,
  isoBoxes,
  isoFullBox,
  readBytes,
  refusal,
  run,
  strip,
  stripAndJudge,
  testScratch,
} from './containers'

// AVIF and HEIC written again from their image items: judged by exiftool, pixels by libvips (AVIF) and libheif's
// heif-convert (HEIC), the coded picture compared byte for byte.

sharp.cache(false)

const scratch = testScratch()

/** The decoded primary picture: libvips for AVIF, libheif's own tool for HEIC (libvips here has no HEVC). */
async function pixels(b: Uint8Array, format: 'avif' | 'heic'): Promise<Buffer> {
  if (format === 'avif') return sharp(b).raw().toBuffer()
  const out = scratch().path(`${crypto.randomUUID()}.png`)
  await run(['heif-convert', await scratch().file(b), out])
  return sharp(out).raw().toBuffer()
}

// --- A plain reader of the meta box (test side) --------------------------------------------------------------------

const u = (b: Uint8Array, at: number, size: number) => {
  let v = 0
  for (let i = 0; i < size; i++) v = v * 256 + b[at + i]!
  return v
}

/** Each item's type (iinf) and bytes (iloc, file offsets or idat), as written by libheif and exiftool. */
function items(b: Uint8Array): Map<number, { type: string; data: Uint8Array }> {
  const meta = isoBoxes(b).find((x) => x.type === 'meta')!
  const children = isoBoxes(b, meta.start + 12, meta.end)
  const iinf = children.find((x) => x.type === 'iinf')!
  const iloc = children.find((x) => x.type === 'iloc')!
  const idat = children.find((x) => x.type === 'idat')
  const types = new Map<number, string>()
  for (const infe of isoBoxes(b, iinf.start + 12 + (b[iinf.start + 8] === 0 ? 2 : 4), iinf.end))
    types.set(u(b, infe.start + 12, 2), Buffer.from(b.subarray(infe.start + 16, infe.start + 20)).toString('latin1'))
  const version = b[iloc.start + 8]!
  const [offsetSize, lengthSize, baseSize] = [
    b[iloc.start + 12]! >> 4,
    b[iloc.start + 12]! & 15,
    b[iloc.start + 13]! >> 4,
  ]
  let at = iloc.start + 14
  const count = u(b, at, version < 2 ? 2 : 4)
  at += version < 2 ? 2 : 4
  const out = new Map<number, { type: string; data: Uint8Array }>()
  for (let i = 0; i < count; i++) {
    const id = u(b, at, version < 2 ? 2 : 4)
    at += version < 2 ? 2 : 4
    const method = version > 0 ? u(b, at, 2) & 15 : 0
    at += version > 0 ? 2 : 0
    const base = u(b, at + 2, baseSize)
    at += 2 + baseSize
    const n = u(b, at, 2)
    at += 2
    const parts: Uint8Array[] = []
    for (let e = 0; e < n; e++) {
      const start = (method === 1 ? idat!.start + 8 : 0) + base + u(b, at, offsetSize)
      parts.push(b.subarray(start, start + u(b, at + offsetSize, lengthSize)))
      at += offsetSize + lengthSize
    }
    out.set(id, { type: types.get(id)!, data: concat(parts) })
  }
  return out
}

/** The coded picture: every coded item's bytes (tiles, grids, thumbnails). */
const coded = (b: Uint8Array) =>
  [...items(b).values()].filter((i) => ['av01', 'hvc1', 'grid'].includes(i.type)).map((i) => i.data)

// --- Files made by real tools --------------------------------------------------------------------------------------

/** A JPEG with a camera's Exif and location in Exif and XMP, as exiftool writes them. */
async function cameraJpeg(name: string): Promise<string> {
  const path = await scratch().file(await photo(64, 48).jpeg({ quality: 95 }).toBuffer(), name)
  await exiftoolWrite(path, [...GPS_TAGS, ...CAMERA_TAGS])
  return path
}

async function corpus(): Promise<{ name: string; file: Bytes; format: 'avif' | 'heic' }[]> {
  const jpeg = await cameraJpeg('camera.jpg')
  const out = (name: string) => scratch().path(name)
  // heif-enc carries the JPEG's Exif (GPS included) into an Exif item; exiftool then adds XMP (a mime item) to one.
  await run(['heif-enc', '-q', '60', '-o', out('heif-enc.heic'), jpeg])
  await run(['heif-enc', '-q', '60', '-A', '-o', out('heif-enc.avif'), jpeg])
  await Bun.write(out('exiftool.heic'), await readBytes(out('heif-enc.heic')))
  await exiftoolWrite(
    out('exiftool.heic'),
    GPS_TAGS.filter((t) => t.startsWith('-XMP')),
  )
  // exiftool writing location into a plain AVIF (new Exif and XMP items), and libvips writing both into one.
  await Bun.write(out('exiftool.avif'), await photo(40, 30).avif().toBuffer())
  await exiftoolWrite(out('exiftool.avif'), [...GPS_TAGS, ...CAMERA_TAGS])
  await Bun.write(
    out('libvips.avif'),
    await photo(40, 30)
      .avif()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
      .withXmp(XMP_WITH_GPS)
      .toBuffer(),
  )
  const names = ['heif-enc.heic', 'exiftool.heic', 'heif-enc.avif', 'exiftool.avif', 'libvips.avif']
  return Promise.all(
    names.map(
      async (name) =>
        ({ name, file: await readBytes(out(name)), format: name.endsWith('avif') ? 'avif' : 'heic' }) as const,
    ),
  )
}

describe('AVIF and HEIC files written by real tools', () => {
  test('lose Exif location, XMP and their bytes in both modes; the coded picture and its pixels stay', async () => {
    const files = await corpus()
    for (const format of ['avif', 'heic'] as const) {
      const some = files.filter((f) => f.format === format)
      const judged = await stripAndJudge(some, format)
      for (const j of judged) {
        const original = some.find((f) => f.name === j.name)!.file
        expect([j.name, j.changed, hasLatitudeBytes(j.stored)]).toEqual([j.name, true, false])
        expect(Object.keys(j.after).filter((k) => k.startsWith('XMP'))).toEqual([])
        expect(contains(j.stored, bytes('<x:xmpmeta'))).toBe(false)
        expect(coded(j.stored)).toEqual(coded(original))
        expect((await pixels(j.stored, format)).equals(await pixels(original, format))).toBe(true)
        const types = [...items(j.stored).values()].map((i) => i.type)
        expect([j.name, j.mode, types.includes('Exif'), types.includes('mime')]).toEqual([
          j.name,
          j.mode,
          j.mode === 'gps',
          false,
        ])
        if (j.mode === 'gps') expect(j.after['IFD0:Make']).toBe('Acme')
      }
    }
  })

  test('a HEIC turned by irot keeps it, and a file of two pictures keeps both', async () => {
    const jpeg = await cameraJpeg('turned.jpg')
    await run(['heif-enc', '-q', '60', '-o', scratch().path('turned.heic'), jpeg])
    const turned = turnedHeic(await readBytes(scratch().path('turned.heic')))
    const [before] = await readTagsOf([turned])
    expect(before!['QuickTime:Rotation']).toBe(90)
    const two = secondPrimary(await heifEnc([photo(32, 16, 3), photo(16, 16, 4)]))
    for (const mode of ['gps', 'all'] as const) {
      const { stored } = strip(turned, 'heic', mode)
      const [after] = await readTagsOf([stored])
      expect(after!['QuickTime:Rotation']).toBe(90)
      expect((await pixels(stored, 'heic')).equals(await pixels(turned, 'heic'))).toBe(true)
      // Nothing to drop there (heif-enc wrote no metadata): the same bytes.
      expect(strip(two, 'heic', mode).out).toBeNull()
    }
  })

  test('a file with nothing to drop is stored byte for byte', async () => {
    const avif = new Uint8Array(await photo(20, 20).avif().toBuffer())
    const png = await scratch().file(await photo(20, 20).png().toBuffer(), 'plain.png')
    await run(['heif-enc', '-q', '60', '-o', scratch().path('plain.heic'), png])
    const heic = await readBytes(scratch().path('plain.heic'))
    for (const mode of ['gps', 'all'] as const) {
      expect(strip(avif, 'avif', mode).out).toBeNull()
      expect(strip(heic, 'heic', mode).out).toBeNull()
    }
  })
})

// --- Crafted files -------------------------------------------------------------------------------------------------

interface CraftItem {
  id: number
  type: string
  data?: Uint8Array
  /** A mime item's content type. */
  contentType?: string
  name?: string
  /** Property indices (1-based); negative: essential. */
  props?: number[]
}

interface Craft {
  properties: Uint8Array[]
  items: CraftItem[]
  refs?: [string, number, number[]][]
  /** Boxes added to meta, and a box of meta given twice. */
  metaExtra?: Uint8Array[]
  twice?: 'iinf' | 'iloc'
  /** Top-level boxes after mdat, bytes after everything. */
  after?: Uint8Array[]
  trailing?: Uint8Array
}

/** A HEIF file built here: ftyp, meta (hdlr, pitm = the first item, iinf, iloc v1, iprp, iref), mdat. */
function craft(ftyp: Uint8Array, c: Craft): Bytes {
  const data = c.items.map((i) => i.data ?? new Uint8Array())
  const metaWith = (offsets: number[]) => {
    const infe = c.items.map((i) =>
      isoFullBox(
        'infe',
        2,
        [i.id >> 8, i.id & 255, 0, 0],
        i.type,
        `${i.name ?? ''}\0`,
        i.contentType ? `${i.contentType}\0` : '',
      ),
    )
    const iinf = isoFullBox('iinf', 0, [0, infe.length], ...infe)
    const placed = c.items.filter((i) => i.data)
    const iloc = isoFullBox(
      'iloc',
      1,
      [0x44, 0x00, 0, placed.length],
      ...placed.map((i) => {
        const k = c.items.indexOf(i)
        const at = offsets[k]!
        const len = data[k]!.length
        return concat([
          [i.id >> 8, i.id & 255, 0, 0, 0, 0, 0, 1],
          [at >>> 24, (at >> 16) & 255, (at >> 8) & 255, at & 255],
          [len >>> 24, (len >> 16) & 255, (len >> 8) & 255, len & 255],
        ])
      }),
    )
    const withProps = c.items.filter((i) => i.props)
    const ipma = isoFullBox(
      'ipma',
      0,
      [0, 0, 0, withProps.length],
      ...withProps.map((i) =>
        concat([[i.id >> 8, i.id & 255, i.props!.length], i.props!.map((p) => (p < 0 ? 0x80 | -p : p))]),
      ),
    )
    const iref = isoFullBox(
      'iref',
      0,
      ...(c.refs ?? []).map(([type, from, to]) =>
        isoBox(type, [from >> 8, from & 255, 0, to.length], ...to.map((t) => [t >> 8, t & 255])),
      ),
    )
    return isoFullBox(
      'meta',
      0,
      isoFullBox('hdlr', 0, [0, 0, 0, 0], 'pict', new Uint8Array(13)),
      isoFullBox('pitm', 0, [c.items[0]!.id >> 8, c.items[0]!.id & 255]),
      iinf,
      ...(c.twice === 'iinf' ? [iinf] : []),
      iloc,
      ...(c.twice === 'iloc' ? [iloc] : []),
      isoBox('iprp', isoBox('ipco', ...c.properties), ipma),
      iref,
      ...(c.metaExtra ?? []),
    )
  }
  const metaLength = metaWith(data.map(() => 0)).length
  let at = ftyp.length + metaLength + 8
  const offsets = data.map((d) => {
    const here = at
    at += d.length
    return here
  })
  return new Uint8Array(
    concat([ftyp, metaWith(offsets), isoBox('mdat', ...data), ...(c.after ?? []), c.trailing ?? new Uint8Array()]),
  )
}

describe('crafted AVIF files', () => {
  let ftyp: Uint8Array
  let properties: Uint8Array[]
  let av01: Uint8Array
  let reference: Buffer
  let gpsTiff: Uint8Array
  const xmp = bytes(XMP_WITH_GPS)
  beforeAll(async () => {
    // The pieces of a plain AVIF made by libvips: its ftyp, its properties (av1C, ispe, pixi) and coded picture (of
    // noise, so over the 1 KiB libheif reads of a file it takes for a sequence).
    const plain = new Uint8Array(await photo(64, 48).avif().toBuffer())
    ftyp = plain.subarray(0, isoBoxes(plain)[0]!.end)
    const meta = isoBoxes(plain).find((x) => x.type === 'meta')!
    const iprp = isoBoxes(plain, meta.start + 12, meta.end).find((x) => x.type === 'iprp')!
    const ipco = isoBoxes(plain, iprp.start + 8, iprp.end).find((x) => x.type === 'ipco')!
    properties = isoBoxes(plain, ipco.start + 8, ipco.end).map((p) => plain.subarray(p.start, p.end))
    av01 = [...items(plain).values()].find((i) => i.type === 'av01')!.data
    reference = await sharp(plain).raw().toBuffer()
    const { exif } = await sharp(
      await photo(8, 8)
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .toBuffer(),
    ).metadata()
    gpsTiff = exif!.subarray(6)
  })
  const picture = (extra: Partial<CraftItem> = {}): CraftItem => ({
    id: 1,
    type: 'av01',
    data: av01,
    props: properties.map((_, i) => -(i + 1)),
    ...extra,
  })
  const exifPayload = () => concat([[0, 0, 0, 6], 'Exif\0\0', gpsTiff])

  test('an Exif item typed mime, XMP, an unknown item, a JPEG item, item names, a uuid box, moov, data after the end: all go', async () => {
    const moov = isoBox('moov', isoBox('udta', isoBox('\xa9xyz', [0, 18, 0x15, 0xc7], '+51.5000-000.1200/')))
    const uuid = isoBox('uuid', new Uint8Array(Buffer.from('be7acfcb97a942e89c71999491e3afac', 'hex')), xmp)
    const jpeg = new Uint8Array(
      await photo(8, 8)
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .toBuffer(),
    )
    const file = craft(ftyp, {
      properties: [...properties, isoFullBox('udes', 0, 'en\0', 'Home\0', 'at 51.5N\0', 'gps\0')],
      items: [
        picture({ name: 'Home at 51.5N', props: [...properties.map((_, i) => -(i + 1)), properties.length + 1] }),
        { id: 2, type: 'mime', contentType: 'application/exif', data: exifPayload() },
        { id: 3, type: 'mime', contentType: 'application/rdf+xml', data: xmp },
        { id: 4, type: 'abcd', data: gpsTiff },
        { id: 5, type: 'jpeg', data: jpeg },
        { id: 6, type: 'uri ', data: xmp },
      ],
      refs: [
        ['cdsc', 2, [1]],
        ['cdsc', 3, [1]],
        ['thmb', 5, [1]],
      ],
      metaExtra: [isoBox('xml ', xmp), isoBox('grpl', isoBox('altr', [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]))],
      after: [uuid, moov],
      trailing: xmp,
    })
    const judged = await stripAndJudge([{ name: 'crafted', file }], 'avif')
    expect(judged[0]!.before['UserData:GPSCoordinates'] ?? judged[0]!.before['QuickTime:GPSCoordinates']).toBeDefined()
    for (const j of judged) {
      for (const gone of [gpsTiff, xmp, jpeg, bytes('51.5'), bytes('Home')])
        expect([j.mode, contains(j.stored, gone)]).toEqual([j.mode, false])
      expect(isoBoxes(j.stored).map((x) => x.type)).toEqual(['ftyp', 'meta', 'mdat'])
      expect([...items(j.stored).values()].map((i) => i.type)).toEqual(['av01'])
      expect((await sharp(j.stored).raw().toBuffer()).equals(reference)).toBe(true)
    }
  })

  test('an image sequence (msf1, a moov track) is stored as its still primary picture', async () => {
    // A stand-in track: what matters is that moov, with its user data (a place), does not stay.
    const moov = isoBox(
      'moov',
      isoBox('trak', isoBox('udta', isoBox('\xa9xyz', [0, 18, 0x15, 0xc7], '+51.5000-000.1200/'))),
    )
    // libvips does not take a file whose major brand is avis at all; libheif takes one that names msf1 for a sequence.
    const sequence = isoBox('ftyp', 'msf1', [0, 0, 0, 0], 'avifmsf1mif1miaf')
    const file = craft(sequence, { properties, items: [picture()], after: [moov] })
    for (const mode of ['gps', 'all'] as const) {
      const { stored } = strip(file, 'avif', mode)
      expect(isoBoxes(stored).map((x) => x.type)).toEqual(['ftyp', 'meta', 'mdat'])
      expect(detectFormat(stored)).toBe('avif')
      const brands = Buffer.from(stored.subarray(8, isoBoxes(stored)[0]!.end)).toString('latin1')
      expect(brands).toBe('avif\0\0\0\0avifmif1miaf') // the sequence brand goes, the major one is the still's
      expect(contains(stored, bytes('+51.5000'))).toBe(false)
      expect((await sharp(stored).raw().toBuffer()).equals(reference)).toBe(true)
    }
  })

  test('mirroring and rotation stay (a padded irot written with its one field); the picture reads the same', async () => {
    const turns = [isoBox('imir', [1]), isoBox('irot', [3], 'GPS 51.5N')]
    const n = properties.length
    const file = craft(ftyp, {
      properties: [...properties, ...turns],
      items: [picture({ props: [...properties.map((_, i) => -(i + 1)), -(n + 1), -(n + 2)] })],
    })
    const turned = await sharp(file).raw().toBuffer({ resolveWithObject: true })
    expect(turned.data.equals(reference)).toBe(false) // the properties do turn it
    for (const mode of ['gps', 'all'] as const) {
      const { stored, out } = strip(file, 'avif', mode)
      expect(out).not.toBeNull()
      expect(contains(stored, bytes('GPS'))).toBe(false)
      expect(contains(stored, isoBox('imir', [1]))).toBe(true)
      expect(contains(stored, isoBox('irot', [3]))).toBe(true)
      const after = await sharp(stored).raw().toBuffer({ resolveWithObject: true })
      expect([after.info.width, after.info.height]).toEqual([turned.info.width, turned.info.height])
      expect(after.data.equals(turned.data)).toBe(true)
    }
  })

  test("the primary's Exif item is rebuilt under 'gps' and dropped under 'all'; other Exif items go", async () => {
    const file = craft(ftyp, {
      properties,
      items: [
        picture(),
        { id: 2, type: 'Exif', data: exifPayload() },
        { id: 3, type: 'Exif', data: concat([[0, 0, 0, 0], gpsTiff]) },
      ],
      refs: [['cdsc', 2, [1]]],
    })
    const [gps, all] = await stripAndJudge([{ name: 'exif', file }], 'avif')
    expect(gps!.after['IFD0:Make']).toBe('Acme')
    expect([...items(gps!.stored).values()].map((i) => i.type)).toEqual(['av01', 'Exif'])
    expect([...items(all!.stored).values()].map((i) => i.type)).toEqual(['av01'])
    for (const j of [gps!, all!]) expect((await sharp(j.stored).raw().toBuffer()).equals(reference)).toBe(true)
  })

  test('a second iinf, iloc or meta, a primary that is not a picture, an unknown essential property or data past the file is refused', () => {
    const xmpItem = { id: 2, type: 'mime', contentType: 'application/rdf+xml', data: xmp }
    const good = craft(ftyp, { properties, items: [picture(), xmpItem] })
    expect(strip(good, 'avif', 'gps').refusal).toBeNull()
    const cases: [string, Uint8Array][] = [
      ['two iinf', craft(ftyp, { properties, items: [picture(), xmpItem], twice: 'iinf' })],
      ['two iloc', craft(ftyp, { properties, items: [picture(), xmpItem], twice: 'iloc' })],
      [
        'two meta',
        concat([
          good,
          isoBoxes(good)
            .filter((x) => x.type === 'meta')
            .map((x) => good.subarray(x.start, x.end))[0]!,
        ]),
      ],
      ['XMP primary', craft(ftyp, { properties, items: [{ ...xmpItem, id: 1 }, picture({ id: 2 })] })],
      [
        'unknown essential property',
        craft(ftyp, {
          properties: [...properties, isoBox('zzzz', xmp)],
          items: [picture({ props: [-1, -2, -3, -4] })],
        }),
      ],
      ['picture cut off', good.subarray(0, good.length - xmp.length - 10)],
    ]
    for (const [name, file] of cases) expect([name, refusal(file, 'avif')]).toEqual([name, expect.any(String)])
    expect(refusal(cases.find(([name]) => name === 'picture cut off')![1], 'avif')).toContain('cut off by the end')
    expect(refusal(cases.find(([name]) => name === 'two iinf')![1], 'avif')).toContain('two iinf boxes')
    // Not essential, the unknown property just goes.
    const loose = craft(ftyp, {
      properties: [...properties, isoBox('zzzz', xmp)],
      items: [picture({ props: [-1, -2, -3, 4] })],
    })
    expect(contains(strip(loose, 'avif', 'all').stored, xmp)).toBe(false)
  })
})
