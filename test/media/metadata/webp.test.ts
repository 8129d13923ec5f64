import { beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { readTagsOf } from '../exiftool'
import { bytes, concat, hasLatitudeBytes, photo, XMP_WITH_GPS } from '../hostile-files'
import {
  type Bytes,
  CAMERA_TAGS,
  contains,
  exiftoolWrite,
  GPS_TAGS,
  readBytes,
  refusal,
  riff,
  riffChunk,
  run,
  strip,
  stripAndJudge,
  testScratch,
  webpChunks,
} from './containers'

// WebP written again from its known chunks: judged by exiftool, pixels by libvips, frames by webpmux.

sharp.cache(false)

const scratch = testScratch()

/** Every frame's pixels (libvips composes an animation's frames on its canvas). */
const pixels = (b: Uint8Array) => sharp(b, { animated: true }).raw().toBuffer()

/** The compressed picture: every VP8/VP8L/ALPH payload, top-level or inside frames, as webpmux extracts frames. */
function pictureChunks(b: Uint8Array): { type: string; data: Uint8Array }[] {
  return webpChunks(b).flatMap((c) =>
    c.type === 'ANMF' ? pictureChunks(concat(['RIFF\0\0\0\0WEBP', c.data.subarray(16)])) : [c],
  )
}
const picture = (b: Uint8Array) =>
  pictureChunks(b)
    .filter((c) => ['VP8 ', 'VP8L', 'ALPH'].includes(c.type))
    .map((c) => c.data)

/** A JPEG photo with a camera's Exif (make, orientation, GPS) and XMP with location, as exiftool writes them. */
async function cameraJpeg(name: string): Promise<string> {
  const path = await scratch().file(await photo(64, 48).jpeg().toBuffer(), name)
  await exiftoolWrite(path, [...GPS_TAGS, ...CAMERA_TAGS])
  return path
}

/** Files written by Debian's webp tools and exiftool, each with location somewhere. */
async function corpus(): Promise<{ name: string; file: Bytes }[]> {
  const jpeg = await cameraJpeg('camera.jpg')
  const out = (name: string) => scratch().path(name)
  // cwebp carries the JPEG's Exif and XMP over; exiftool writes GPS into a plain WebP's EXIF and XMP.
  await run(['cwebp', '-quiet', '-metadata', 'all', jpeg, '-o', out('cwebp.webp')])
  await Bun.write(out('exiftool.webp'), await photo(40, 30).webp({ quality: 80 }).toBuffer())
  await exiftoolWrite(out('exiftool.webp'), [...GPS_TAGS, ...CAMERA_TAGS])
  // Lossless with alpha and an ICC profile, metadata set by webpmux.
  await Bun.write(
    out('alpha.png'),
    await sharp({ create: { width: 20, height: 20, channels: 4, background: { r: 9, g: 80, b: 200, alpha: 0.5 } } })
      .png()
      .withIccProfile('p3')
      .toBuffer(),
  )
  await run(['cwebp', '-quiet', '-lossless', '-metadata', 'icc', out('alpha.png'), '-o', out('alpha.webp')])
  await Bun.write(out('xmp.xml'), XMP_WITH_GPS)
  await run(['webpmux', '-set', 'xmp', out('xmp.xml'), out('alpha.webp'), '-o', out('webpmux.webp')])
  // An animation from a GIF whose XMP (location) gif2webp copies over.
  await run([
    'convert',
    '-size',
    '30x20',
    'xc:red',
    'xc:blue',
    'xc:green',
    '-set',
    'delay',
    '25',
    '-loop',
    '2',
    out('anim.gif'),
  ])
  await exiftoolWrite(out('anim.gif'), ['-XMP-exif:GPSLatitude=51.5', '-XMP-photoshop:City=London'])
  await run(['gif2webp', '-quiet', out('anim.gif'), '-o', out('gif2webp.webp')])
  const names = ['cwebp.webp', 'exiftool.webp', 'webpmux.webp', 'gif2webp.webp']
  return Promise.all(names.map(async (name) => ({ name, file: await readBytes(out(name)) })))
}

describe('WebP files written by real tools', () => {
  test('lose every location in both modes; pixels, compressed picture, ICC, orientation and animation stay', async () => {
    const files = await corpus()
    const judged = await stripAndJudge(files, 'webp')
    for (const j of judged) {
      const original = files.find((f) => f.name === j.name)!.file
      expect([j.name, j.changed]).toEqual([j.name, true])
      expect([j.name, hasLatitudeBytes(j.stored)]).toEqual([j.name, false])
      expect((await pixels(j.stored)).equals(await pixels(original))).toBe(true)
      expect(picture(j.stored)).toEqual(picture(original))
      for (const tag of ['RIFF:AnimationLoopCount', 'RIFF:Duration', 'RIFF:FrameCount'])
        expect([j.name, tag, j.after[tag]]).toEqual([j.name, tag, j.before[tag]])
      expect(j.after['ICC_Profile:ProfileDescription']).toEqual(j.before['ICC_Profile:ProfileDescription'])
      if (j.before['IFD0:Orientation'] !== undefined) expect(j.after['IFD0:Orientation']).toBe(6)
      if (j.mode === 'gps' && j.before['IFD0:Make']) {
        expect(j.after['IFD0:Make']).toBe('Acme')
        expect(j.after['IFD0:Model']).toBe('X100')
      }
      // The VP8X flags (exiftool's number) say what is there: EXIF (8) only while it is kept, never XMP (4).
      const flags = Number(j.after['RIFF:WebP_Flags'])
      expect([j.name, flags & 4]).toEqual([j.name, 0])
      expect([j.name, flags & 8]).toEqual([j.name, j.after['IFD0:Make'] || j.after['IFD0:Orientation'] ? 8 : 0])
    }
    // The animation as libwebp's own tool sees it: frames, their durations, the loop count.
    const info = (b: Uint8Array) =>
      scratch()
        .file(b)
        .then((path) => run(['webpmux', '-info', path]))
    const anim = files.find((f) => f.name === 'gif2webp.webp')!.file
    const animInfo = await info(anim)
    expect(animInfo).toContain('Number of frames: 3')
    for (const mode of ['gps', 'all'] as const) {
      const after = await info(strip(anim, 'webp', mode).stored)
      expect(after.replace(/Size of the XMP metadata.*\n/, '').replace(/Features present: .*\n/, '')).toEqual(
        animInfo.replace(/Size of the XMP metadata.*\n/, '').replace(/Features present: .*\n/, ''),
      )
    }
    // libvips applies the kept orientation as it did before.
    const camera = files.find((f) => f.name === 'cwebp.webp')!.file
    for (const mode of ['gps', 'all'] as const)
      expect((await sharp(strip(camera, 'webp', mode).stored).metadata()).orientation).toBe(6)
  })

  test('a WebP with nothing to drop is stored byte for byte: plain, ICC only, a clean Exif', async () => {
    const plain = new Uint8Array(await photo(20, 20).webp().toBuffer())
    const jpeg = await scratch().file(await photo(20, 20).jpeg().toBuffer(), 'clean.jpg')
    await exiftoolWrite(jpeg, ['-EXIF:Make=Acme', '-EXIF:Orientation=6'])
    await run(['cwebp', '-quiet', '-metadata', 'exif', jpeg, '-o', scratch().path('clean.webp')])
    const withExif = await readBytes(scratch().path('clean.webp'))
    const icc = await scratch().file(await photo(20, 20).png().withIccProfile('p3').toBuffer(), 'icc.png')
    await run(['cwebp', '-quiet', '-metadata', 'icc', icc, '-o', scratch().path('icc.webp')])
    const withIcc = await readBytes(scratch().path('icc.webp'))
    for (const file of [plain, withIcc])
      for (const mode of ['gps', 'all'] as const) expect(strip(file, 'webp', mode).out).toBeNull()
    expect(strip(withExif, 'webp', 'gps').out).toBeNull()
    // Under 'all' the camera's make goes, the orientation stays.
    const [all] = await readTagsOf([strip(withExif, 'webp', 'all').stored])
    expect([all!['IFD0:Make'], all!['IFD0:Orientation']]).toEqual([undefined, 6])
  })
})

describe('crafted WebP files', () => {
  let still: Bytes
  let vp8: Uint8Array
  beforeAll(async () => {
    still = new Uint8Array(
      await photo(20, 20)
        .webp()
        .withExif({ IFD0: { Make: 'Acme' } })
        .toBuffer(),
    )
    vp8 = webpChunks(still).find((c) => c.type === 'VP8 ')!.data
  })
  const vp8x = (flags: number) => riffChunk('VP8X', new Uint8Array([flags, 0, 0, 0, 19, 0, 0, 19, 0, 0]))
  const gpsTiff = async () => {
    const { exif } = await sharp(
      await photo(8, 8)
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 26/1' } })
        .toBuffer(),
    ).metadata()
    return exif!.subarray(6)
  }

  test('unknown chunks, XMP, data after the RIFF end and a second EXIF are dropped; EXIF with or without its prefix is cleaned', async () => {
    const tiff = await gpsTiff()
    const xmp = bytes(XMP_WITH_GPS)
    const files = [
      { name: 'unknown chunk', file: riff([vp8x(0), riffChunk('VP8 ', vp8), riffChunk('GPSx', xmp)]) },
      {
        name: 'after the RIFF end',
        file: new Uint8Array(concat([riff([riffChunk('VP8 ', vp8)]), riffChunk('XMP ', xmp)])),
      },
      { name: 'bare EXIF', file: riff([vp8x(8), riffChunk('VP8 ', vp8), riffChunk('EXIF', tiff)]) },
      {
        name: 'prefixed EXIF, then a second one',
        file: riff([
          vp8x(8),
          riffChunk('VP8 ', vp8),
          riffChunk('EXIF', concat(['Exif\0\0', tiff])),
          riffChunk('EXIF', tiff),
        ]),
      },
      { name: 'simple file with XMP', file: riff([riffChunk('VP8 ', vp8), riffChunk('XMP ', xmp)]) },
    ]
    const judged = await stripAndJudge(files, 'webp')
    for (const j of judged) {
      expect([j.name, hasLatitudeBytes(j.stored), contains(j.stored, xmp)]).toEqual([j.name, false, false])
      expect(webpChunks(j.stored).map((c) => c.type)).not.toContain('GPSx')
      expect((await pixels(j.stored)).equals(await pixels(still))).toBe(true)
      const riffSize = Buffer.from(j.stored).readUInt32LE(4)
      expect(riffSize).toBe(j.stored.length - 8)
      if (j.name.includes('EXIF') && j.mode === 'gps') {
        expect(j.after['IFD0:Make']).toBe('Acme')
        expect(webpChunks(j.stored).filter((c) => c.type === 'EXIF').length).toBe(1)
      }
    }
    // A rebuilt EXIF is a bare TIFF structure, as the WebP format has it (exiftool reads a prefix there as improper).
    const rebuilt = webpChunks(strip(files[3]!.file, 'webp', 'gps').stored).find((c) => c.type === 'EXIF')!
    expect(Buffer.from(rebuilt.data.subarray(0, 4)).toString('latin1')).toBe('II*\0')
  })

  test('an animation frame keeps only its picture sub-chunks; a still file loses stray frames, an animated one stray pictures', async () => {
    const frameHead = new Uint8Array([0, 0, 0, 0, 0, 0, 19, 0, 0, 19, 0, 0, 100, 0, 0, 0])
    const xmp = bytes(XMP_WITH_GPS)
    const anmf = riffChunk('ANMF', concat([frameHead, riffChunk('VP8 ', vp8), riffChunk('XMP ', xmp)]))
    const anim = riffChunk('ANIM', new Uint8Array([0, 0, 0, 0, 0, 0]))
    const animated = riff([vp8x(2), anim, anmf, riffChunk('VP8 ', concat([vp8, 'GPS']))])
    const stillWithFrame = riff([vp8x(0), riffChunk('VP8 ', vp8), anim, anmf])
    // libwebp refuses both as they are; what is left of each is the plain file it reads.
    const references = [
      riff([vp8x(2), anim, riffChunk('ANMF', concat([frameHead, riffChunk('VP8 ', vp8)]))]),
      riff([vp8x(0), riffChunk('VP8 ', vp8)]),
    ]
    for (const [i, file] of [animated, stillWithFrame].entries()) {
      const { stored } = strip(file, 'webp', 'all')
      expect(contains(stored, xmp)).toBe(false)
      expect(stored).toEqual(references[i]!)
      expect((await pixels(stored)).equals(await pixels(still))).toBe(true)
    }
    expect(webpChunks(strip(animated, 'webp', 'all').stored).map((c) => c.type)).toEqual(['VP8X', 'ANIM', 'ANMF'])
    expect(webpChunks(strip(stillWithFrame, 'webp', 'all').stored).map((c) => c.type)).toEqual(['VP8X', 'VP8 '])
  })

  test('a chunk that runs past the RIFF end, a RIFF size past the file, or no image chunk first is refused', () => {
    const long = riff([riffChunk('VP8 ', vp8)])
    Buffer.from(long.buffer).writeUInt32LE(vp8.length + 100, 16)
    expect(refusal(long, 'webp')).toContain('runs past')
    const cut = riff([riffChunk('VP8 ', vp8)]).subarray(0, 40)
    expect(refusal(cut, 'webp')).toContain('runs past')
    expect(refusal(riff([riffChunk('XMP ', 'x'), riffChunk('VP8 ', vp8)]), 'webp', 'all')).toContain('no image chunk')
  })
})
