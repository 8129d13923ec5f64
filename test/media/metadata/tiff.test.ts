import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { Cost, LOCATION_UNSAFE } from '../../../src/media/exif'
import { cleanExif } from '../../../src/media/metadata/tiff'
import { locationTags, metadataTags, readTagsOf, type Tags } from '../exiftool'
import { scratchDir } from '../helpers'
import { buildTiff, concat, photo, type TiffField } from '../hostile-files'
import { refusal, strip } from './containers'
import { craftedTiffs } from './crafted'
import { judgePhotos, tiffFile, toolCorpus } from './photos'

// cleanExif: an Exif block rebuilt from the whitelist, judged by exiftool reading the structures before and after.

sharp.cache(false)

let scratch: Awaited<ReturnType<typeof scratchDir>>
beforeAll(async () => {
  scratch = await scratchDir()
})
afterAll(() => scratch.cleanup())

const clean = (tiff: Uint8Array, mode: 'gps' | 'all') => cleanExif(tiff, mode, new Cost())

/** exiftool's tags of each structure (one run), without the file's own groups and those it derives (Composite). */
async function tagsOf(...structures: Uint8Array[]): Promise<Tags[]> {
  const all = await readTagsOf(structures)
  return all.map((tags) =>
    Object.fromEntries(Object.entries(tags).filter(([k]) => !/^(SourceFile|File|System|ExifTool|Composite):?/.test(k))),
  )
}

/** A camera's Exif as exiftool writes it into a JPEG, extracted again by libvips (neither is our code). */
async function cameraExif(): Promise<Uint8Array> {
  const thumb = await scratch.file(await photo(8, 8, 3).jpeg().toBuffer(), 'thumb.jpg')
  const path = await scratch.file(await photo().jpeg().toBuffer(), 'camera.jpg')
  const args = [
    '-GPSLatitude=51.5',
    '-GPSLatitudeRef=N',
    '-GPSLongitude=0.12',
    '-GPSLongitudeRef=W',
    '-GPSAltitude=30',
    '-Make=Acme',
    '-Model=X100',
    '-DateTimeOriginal=2024:05:01 10:00:00',
    '-ExposureTime=0.01',
    '-FNumber=2.8',
    '-ISO=200',
    '-LensModel=L35',
    '-UserComment=at home',
    '-ImageDescription=Trafalgar Square',
    '-SubjectLocation=10 10',
    '-Orientation=6',
    '-Artist=Ann',
    '-InteropIndex=R98',
    `-ThumbnailImage<=${thumb}`,
  ]
  const proc = Bun.spawn(['exiftool', '-q', '-overwrite_original', '-n', ...args, path], { stderr: 'pipe' })
  expect(await proc.exited).toBe(0)
  const { exif } = await sharp(path).metadata()
  return new Uint8Array(exif!.subarray(6))
}

describe('cleanExif', () => {
  test("'gps' keeps the camera, exposure, dates, lens, author and orientation; drops GPS, free text and the thumbnail", async () => {
    const exif = await cameraExif()
    const out = clean(exif, 'gps')!
    const [before, after] = await tagsOf(exif, out)
    expect(locationTags(before!).length).toBeGreaterThan(3)
    expect(before!['IFD1:ThumbnailLength']).toBeDefined()
    expect(locationTags(after!)).toEqual([])
    const kept = [
      'IFD0:Make',
      'IFD0:Model',
      'IFD0:Orientation',
      'IFD0:Artist',
      'ExifIFD:DateTimeOriginal',
      'ExifIFD:ExposureTime',
      'ExifIFD:FNumber',
      'ExifIFD:ISO',
      'ExifIFD:LensModel',
      'InteropIFD:InteropIndex',
    ]
    for (const tag of kept) expect([tag, after![tag]]).toEqual([tag, before![tag]])
    for (const gone of ['IFD0:ImageDescription', 'ExifIFD:UserComment', 'ExifIFD:SubjectLocation'])
      expect([gone, after![gone]]).toEqual([gone, undefined])
    expect(Object.keys(after!).filter((k) => k.startsWith('IFD1:') || k.startsWith('GPS:'))).toEqual([])
    // A rebuilt block is already clean: cleaning it again keeps it as it is.
    expect(clean(out, 'gps')).toBe(out)
  })

  test("'all' keeps only a turned or mirrored orientation; an upright one or none leaves nothing", async () => {
    const exif = await cameraExif()
    const out = clean(exif, 'all')!
    const [after] = await tagsOf(out)
    expect(metadataTags(after!)).toEqual([])
    expect(after!['IFD0:Orientation']).toBe(6)
    const upright = buildTiff({
      ifd0: [
        [0x010f, 2, 'Acme'],
        [0x0112, 3, [1]],
      ],
    })
    expect(clean(upright, 'all')).toBeNull()
    expect(clean(buildTiff({ ifd0: [[0x0112, 3, [9]]] }), 'gps')).toBeNull() // not an orientation at all
    expect(clean(out, 'all')).toBe(out)
  })

  test('a block holding only kept tags, in either byte order, is returned as it is', async () => {
    const fields: TiffField[] = [
      [0x010f, 2, 'Acme'],
      [0x0110, 2, 'Model Five'],
      [0x8769, 4, { dir: 'exif' }],
    ]
    const exif: TiffField[] = [
      [0x829a, 5, [1, 100]],
      [0x9003, 2, '2024:05:01 10:00:00'],
    ]
    for (const le of [true, false]) {
      const tiff = buildTiff({ ifd0: fields, exif }, { le })
      expect(clean(tiff, 'gps')).toBe(tiff)
    }
    // libvips' own Exif (Make, resolution, Exif version, colour space, dimensions).
    const { exif: vips } = await sharp(
      await photo()
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' } })
        .toBuffer(),
    ).metadata()
    const tiff = new Uint8Array(vips!.subarray(6))
    expect(clean(tiff, 'gps')).toBe(tiff)
  })

  test('GPS wherever exiftool finds it is left out: the GPS directory, GlobalParametersIFD, SubIFDs, IFD1, a magic that is not 42', async () => {
    const gps: TiffField[] = [
      [0x0001, 2, 'N'],
      [0x0002, 5, [51, 1, 30, 1, 26, 1]],
      [0x0003, 2, 'W'],
      [0x0004, 5, [0, 1, 7, 1, 39, 1]],
    ]
    const make: TiffField = [0x010f, 2, 'Acme']
    const withGps: TiffField = [0x8825, 4, { dir: 'gps' }]
    const cases = [
      buildTiff({ ifd0: [make, withGps], gps }),
      buildTiff({ ifd0: [make, [0x0190, 4, { dir: 'global' }]], global: [withGps], gps }), // GlobalParametersIFD
      buildTiff({ ifd0: [make, [0x014a, 4, { dir: 'sub' }]], sub: [withGps], gps }), // SubIFDs
      buildTiff({ ifd0: [make], ifd1: [withGps], gps }, { next: { ifd0: 'ifd1' } }),
      buildTiff({ ifd0: [make, [0x8769, 4, { dir: 'exif' }]], exif: [withGps], gps }), // GPS pointer in the Exif IFD
      buildTiff({ ifd0: [make, withGps], gps }, { le: false }),
    ]
    const magic = buildTiff({ ifd0: [make, withGps], gps }, { magic: 0x00ff })
    const outs = cases.map((c) => clean(c, 'gps'))
    const tags = await tagsOf(...cases, magic, ...outs.map((o) => o!))
    for (const before of tags.slice(0, cases.length + 1)) expect(locationTags(before).length).toBeGreaterThan(1)
    for (const after of tags.slice(cases.length + 1)) {
      expect(locationTags(after)).toEqual([])
      expect(after['IFD0:Make']).toBe('Acme')
    }
    expect(clean(magic, 'gps')).toBeNull() // exiftool only warns; no header we accept
  })

  test('maker notes, XMP, IPTC and Photoshop blocks, unknown and private tags, wrong types and counts are left out', async () => {
    const xmp = '<x:xmpmeta><rdf:Description exif:GPSLatitude="51,30N"/></x:xmpmeta>'
    const tiff = buildTiff({
      ifd0: [
        [0x010f, 2, 'Acme'],
        [0x0110, 4, [7]], // Model as a LONG
        [0x0112, 3, [6, 6]], // two orientations
        [0x02bc, 1, xmp], // XMP
        [0x83bb, 7, 'iptc'], // IPTC
        [0x8649, 7, 'photoshop'], // Photoshop resources
        [0xc4a5, 7, 'print image matching'], // private
        [0x8769, 4, { dir: 'exif' }],
      ],
      exif: [
        [0x927c, 7, 'Nikon\0GPS 51.5 -0.12'], // MakerNote
        [0x829a, 5, [1, 100]],
        [0x829a, 5, [1, 50]], // a second ExposureTime
        [0x9003, 2, 'x'.repeat(40)], // a date longer than any date
      ],
    })
    const out = clean(tiff, 'gps')!
    const [after] = await tagsOf(out)
    expect(Object.keys(after!).sort()).toEqual(['ExifIFD:ExposureTime', 'IFD0:Make'])
    expect(after!['ExifIFD:ExposureTime']).toBe(0.01)
    expect(Buffer.from(out).includes('GPS')).toBe(false)
  })

  test('what is not whole is left out: a value or a directory past the end, bytes no directory points at', async () => {
    const tiff = buildTiff({
      ifd0: [
        [0x010f, 2, 'Acme'],
        [0x0110, 2, 'Model Five'],
        [0x8769, 4, { dir: 'exif' }],
      ],
      exif: [[0x829a, 5, [1, 100]]],
    })
    const view = Buffer.from(tiff)
    const modelEntry = 8 + 2 + 12
    const cut = Buffer.from(view)
    cut.writeUInt32LE(tiff.length - 4, modelEntry + 8) // Model's 11 bytes now run past the end
    const exifEntry = modelEntry + 12
    const lost = Buffer.from(view)
    lost.writeUInt32LE(tiff.length - 6, exifEntry + 8) // the Exif directory past the end
    const [afterCut, afterLost] = await tagsOf(clean(cut, 'gps')!, clean(lost, 'gps')!)
    expect(Object.keys(afterCut!).sort()).toEqual(['ExifIFD:ExposureTime', 'IFD0:Make'])
    expect(Object.keys(afterLost!).sort()).toEqual(['IFD0:Make', 'IFD0:Model'])
    expect(clean(tiff.subarray(0, 20), 'gps')).toBeNull() // IFD0 itself cut
    // A latitude hidden in bytes no directory points at: read by nobody, but not kept either.
    const hidden = concat([tiff, [51, 0, 0, 0, 1, 0, 0, 0]])
    const out = clean(hidden, 'gps')!
    expect(out).not.toBe(hidden)
    expect(Buffer.from(out).includes(Buffer.from([51, 0, 0, 0, 1, 0, 0, 0]))).toBe(false)
  })

  test('costs a constant per byte of the structure, however many entries claim however much', () => {
    const entries = 5000
    const tiff = buildTiff({
      ifd0: Array.from({ length: entries }, (_, i): TiffField => [0x010f + (i % 3), 2, 'A'.repeat(1 + (i % 40))]),
    })
    const cost = new Cost()
    cleanExif(tiff, 'gps', cost)
    expect(cost.units).toBeLessThan(4 * tiff.length)
  })
})

describe('TIFF files', () => {
  test('files written by exiftool and by convert photo.jpg photo.tif: no location stored, same pixels', async () => {
    const tools = (await toolCorpus(scratch.dir)).filter((s) => s.format === 'tiff')
    for (const j of await judgePhotos(tools)) {
      if (j.mode === 'gps' && j.name.startsWith('exiftool')) expect(j.after['IFD0:Make']).toBe('Acme')
    }
  })

  test("the issue's crafted forms: Photoshop's Exif, GlobalParametersIFD, SubIFDs, a second page, XMP and IPTC", async () => {
    const judged = await judgePhotos(craftedTiffs())
    const turned = judged.filter((j) => j.name.includes('turned'))
    expect(turned.map((j) => [j.mode, j.after['IFD0:Orientation'], j.after['IFD0:Make']])).toEqual([
      ['gps', 6, 'Acme'],
      ['all', 6, undefined],
    ])
    // The first page only: the second's directory is gone with the GPS it pointed at.
    for (const j of judged.filter((j) => j.name.includes('second page')))
      expect(Object.keys(j.after).filter((k) => k.startsWith('IFD1:'))).toEqual([])
  })

  test('a TIFF with nothing to drop is kept byte for byte: libvips writes only the picture tags', async () => {
    for (const compression of ['jpeg', 'lzw', 'none'] as const) {
      const file = new Uint8Array(await photo(20, 12).tiff({ compression }).toBuffer())
      for (const mode of ['gps', 'all'] as const)
        expect([compression, mode, strip(file, 'tiff', mode).out]).toEqual([compression, mode, null])
    }
    expect(strip(tiffFile(), 'tiff', 'all').out).toBeNull()
  })

  test('image data that cannot be located whole is refused', () => {
    const file = tiffFile()
    const past = Buffer.from(file)
    past.writeUInt32LE(file.length, 8 + 2 + 5 * 12 + 8) // StripOffsets (the sixth entry) now past the end
    const twice = tiffFile([], {}, { height: 8 })
    const counts = Buffer.from(twice)
    counts.writeUInt32LE(twice.length, 8 + 2 + 8 * 12 + 8) // StripByteCounts claiming the whole file
    const none = buildTiff({
      ifd0: [
        [0x0100, 3, [4]],
        [0x0101, 3, [4]],
      ],
    })
    expect(refusal(past, 'tiff')).toBe(`${LOCATION_UNSAFE} (TIFF image data past the end of the file or overlapping)`)
    expect(refusal(counts, 'tiff')).toBe(`${LOCATION_UNSAFE} (TIFF image data past the end of the file or overlapping)`)
    expect(refusal(none, 'tiff', 'all')).toBe(`${LOCATION_UNSAFE} (a TIFF without image data)`)
  })
})
