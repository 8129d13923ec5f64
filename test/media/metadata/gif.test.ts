import { beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { bytes, concat, XMP_WITH_GPS } from '../hostile-files'
import {
  type Bytes,
  contains,
  exiftoolWrite,
  GPS_TAGS,
  readBytes,
  refusal,
  run,
  strip,
  stripAndJudge,
  testScratch,
} from './containers'

// GIF written again from its picture blocks: judged by exiftool, frames and timing by gifsicle, pixels by libvips.

sharp.cache(false)

const scratch = testScratch()

const pixels = (b: Uint8Array) => sharp(b, { animated: true }).raw().toBuffer()

/** gifsicle's account of the animation: frames, sizes, delays, disposal, loop count; without what is metadata. */
async function animation(b: Uint8Array): Promise<string> {
  const info = await run(['gifsicle', '--info', await scratch().file(b)])
  return info
    .split('\n')
    .slice(1) // the file name
    .filter((line) => !/comment|extension/.test(line))
    .join('\n')
}

/** A three-frame animation (delays, loop count, a transparent frame) as ImageMagick writes it. */
async function magickAnimation(name: string): Promise<string> {
  const path = scratch().path(name)
  await run([
    'convert',
    '-size',
    '32x24',
    'xc:red',
    '(',
    '-size',
    '32x24',
    'gradient:blue-yellow',
    ')',
    '(',
    '-size',
    '32x24',
    'xc:none',
    '-fill',
    'green',
    '-draw',
    'circle 16,12 16,4',
    ')',
    '-set',
    'delay',
    '15',
    '-set',
    'comment',
    'Shot at 51.5N 0.12W',
    '-loop',
    '3',
    path,
  ])
  return path
}

describe('GIF files written by real tools', () => {
  test('lose comments, XMP and every other extension in both modes; frames, delays, loop count and pixels stay', async () => {
    // ImageMagick with a comment; exiftool adding XMP with location (and another comment); gifsicle's own comment.
    const magick = await magickAnimation('magick.gif')
    const exiftool = await magickAnimation('exiftool.gif')
    await exiftoolWrite(exiftool, [...GPS_TAGS.filter((t) => t.startsWith('-XMP')), '-Comment=at 51.5N'])
    await run(['gifsicle', '--comment', 'Home: 51.5N 0.12W', '--loopcount=7', magick, '-o', scratch().path('gs.gif')])
    const files = await Promise.all(
      ['magick.gif', 'exiftool.gif', 'gs.gif'].map(async (name) => ({
        name,
        file: await readBytes(scratch().path(name)),
      })),
    )
    const judged = await stripAndJudge(files, 'gif', { clean: true })
    for (const j of judged) {
      const original = files.find((f) => f.name === j.name)!.file
      expect([j.name, j.changed]).toEqual([j.name, true])
      expect(Object.keys(j.after).filter((k) => /Comment|XMP/.test(k))).toEqual([])
      expect(await animation(j.stored)).toEqual(await animation(original))
      expect((await pixels(j.stored)).equals(await pixels(original))).toBe(true)
      for (const tag of ['GIF:FrameCount', 'GIF:Duration', 'GIF:AnimationIterations'])
        expect([j.name, tag, j.after[tag]]).toEqual([j.name, tag, j.before[tag]])
    }
    // The originals did carry what went.
    const before = judged.find((j) => j.name === 'exiftool.gif')!.before
    expect(before['XMP-exif:GPSLatitude']).toBe(51.5)
    for (const { file } of files) expect(contains(file, bytes('51.5N'))).toBe(true)
    for (const j of judged) expect([j.name, contains(j.stored, bytes('51.5N'))]).toEqual([j.name, false])
    expect(await animation(files[2]!.file)).toContain('loop count 7')
  })

  test('a GIF with nothing to drop is stored byte for byte', async () => {
    const plain = await magickAnimation('plain.gif')
    await run(['gifsicle', '--no-comments', '-b', plain])
    const file = await readBytes(plain)
    for (const mode of ['gps', 'all'] as const) expect(strip(file, 'gif', mode).out).toBeNull()
    const still = new Uint8Array(
      await sharp({ create: { width: 4, height: 4, channels: 3, background: '#123' } })
        .gif()
        .toBuffer(),
    )
    expect(strip(still, 'gif', 'all').out).toBeNull()
  })
})

describe('crafted GIF blocks', () => {
  let base: Bytes
  let trailerAt: number
  beforeAll(async () => {
    base = await readBytes(await magickAnimation('base.gif'))
    await run(['gifsicle', '--no-comments', '-b', scratch().path('base.gif')])
    base = await readBytes(scratch().path('base.gif'))
    trailerAt = base.length - 1
    expect(base[trailerAt]).toBe(0x3b)
  })

  /** Data sub-blocks of at most 255 bytes, then the terminator. */
  const subBlocks = (data: Uint8Array) => {
    const out: (number[] | Uint8Array)[] = []
    for (let i = 0; i < data.length; i += 255) {
      const piece = data.subarray(i, i + 255)
      out.push([piece.length], piece)
    }
    return concat([...out, [0]])
  }
  const extension = (label: number, ...parts: Uint8Array[]) => concat([[0x21, label], ...parts])
  const application = (id: string, data: Uint8Array) => extension(0xff, concat([[11], id]), subBlocks(data))
  /** The blocks inserted before the trailer; `tail` after it. */
  const withBlocks = (blocks: Uint8Array[], tail: Uint8Array = new Uint8Array()) =>
    concat([base.subarray(0, trailerAt), ...blocks, base.subarray(trailerAt), tail])

  test('XMP, comments, plain text, unknown extensions and application blocks, data after the trailer: all dropped', async () => {
    const xmp = bytes(XMP_WITH_GPS)
    const files = [
      { name: 'xmp', file: withBlocks([application('XMP DataXMP', xmp)]) },
      { name: 'comment', file: withBlocks([extension(0xfe, subBlocks(bytes('GPS 51.5N 0.12W')))]) },
      {
        name: 'plain text',
        file: withBlocks([extension(0x01, subBlocks(concat([new Uint8Array(12), 'City: London'])))]),
      },
      { name: 'unknown label', file: withBlocks([extension(0x99, subBlocks(xmp))]) },
      { name: 'IPTC app', file: withBlocks([application('MGKIPTC0000', xmp)]) },
      { name: 'after trailer', file: withBlocks([], xmp) },
    ]
    for (const { name, file } of files) {
      for (const mode of ['gps', 'all'] as const) {
        const { stored, out } = strip(file, 'gif', mode)
        expect([name, out === null]).toEqual([name, false])
        expect([name, contains(stored, bytes('51.5')), contains(stored, bytes('London'))]).toEqual([name, false, false])
        expect(stored).toEqual(base)
      }
    }
    // exiftool reads the XMP's location and the comment (descriptive: 'all' must not leave it) before, neither after.
    const judged = [
      ...(await stripAndJudge(files.slice(0, 1), 'gif')),
      ...(await stripAndJudge(files.slice(1, 2), 'gif', { clean: true })),
    ]
    expect(judged.map((j) => [j.name, j.changed, j.after['File:Comment']])).toEqual(
      judged.map((j) => [j.name, true, undefined]),
    )
    expect(judged[2]!.before['File:Comment']).toBe('GPS 51.5N 0.12W')
  })

  test('an ICC profile (ICCRGBG1012) stays, in both modes', async () => {
    const { icc } = await sharp(await sharp(base).withIccProfile('p3').png().toBuffer()).metadata()
    const profile = application('ICCRGBG1012', new Uint8Array(icc!))
    const file = withBlocks([profile, application('XMP DataXMP', bytes(XMP_WITH_GPS))])
    const judged = await stripAndJudge([{ name: 'icc', file }], 'gif')
    for (const j of judged) {
      expect(contains(j.stored, profile)).toBe(true)
      expect(j.after['ICC_Profile:ProfileDescription']).toBe(j.before['ICC_Profile:ProfileDescription'])
      expect(j.after['ICC_Profile:ProfileDescription']).toBeDefined()
    }
  })

  test('the loop extension keeps only its count; a file without a trailer gets one; a cut-off one is refused', async () => {
    const loop = concat([[0x21, 0xff, 11], 'NETSCAPE2.0', [3, 1, 5, 0], [5, 2, 0, 0, 0, 0], [4], 'GPS!', [0]])
    const header = base.subarray(0, 13 + 3 * 2 ** ((base[10]! & 7) + 1))
    const rest = base.subarray(header.length)
    const withLoop = concat([header, loop, rest])
    const { stored } = strip(withLoop, 'gif', 'gps')
    expect(contains(stored, bytes('GPS!'))).toBe(false)
    expect(contains(stored, concat([[0x21, 0xff, 11], 'NETSCAPE2.0', [3, 1, 5, 0, 0]]))).toBe(true)
    expect((await pixels(stored)).equals(await pixels(base))).toBe(true)

    const noTrailer = base.subarray(0, trailerAt)
    expect(strip(noTrailer, 'gif', 'gps').stored).toEqual(base)
    for (const cut of [base.subarray(0, trailerAt - 3), base.subarray(0, 10), withBlocks([new Uint8Array([0x42])])])
      expect(refusal(cut, 'gif')).toContain('GIF cut off')
  })
})
