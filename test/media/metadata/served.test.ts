import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { uploadForm } from '../../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../../helpers'
import { fakeClassifier } from '../../moderation/fake-classifier'
import { locationTags, metadataTags, readTagsOf } from '../exiftool'
import { bytes, GPS, photo, XMP_WITH_GPS } from '../hostile-files'
import { type Bytes, CAMERA_TAGS, exiftoolWrite, GPS_TAGS, readBytes, run, testScratch } from './containers'

// End to end for WebP, GIF, AVIF, HEIC and SVG: files with location uploaded through the real server, what the
// direct link then serves read by exiftool.

sharp.cache(false)

const scratch = testScratch()

/** One file of each format, each with location where its tools put it. */
async function uploads(): Promise<{ name: string; bytes: Bytes }[]> {
  const jpeg = await scratch().file(await photo(48, 32).jpeg({ quality: 95 }).toBuffer(), 'camera.jpg')
  await exiftoolWrite(jpeg, [...GPS_TAGS, ...CAMERA_TAGS])
  await run(['cwebp', '-quiet', '-metadata', 'all', jpeg, '-o', scratch().path('a.webp')])
  await run(['heif-enc', '-q', '60', '-o', scratch().path('a.heic'), jpeg])
  await run([
    'convert',
    '-size',
    '24x16',
    'xc:red',
    'xc:blue',
    '-set',
    'delay',
    '20',
    '-loop',
    '0',
    scratch().path('a.gif'),
  ])
  await exiftoolWrite(
    scratch().path('a.gif'),
    GPS_TAGS.filter((t) => t.startsWith('-XMP')),
  )
  await run(['gif2webp', '-quiet', scratch().path('a.gif'), '-o', scratch().path('anim.webp')])
  const avif = await photo(40, 30)
    .avif()
    .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
    .withXmp(XMP_WITH_GPS)
    .toBuffer()
  const svg = bytes(
    `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30" gpslatitude="51.5"><title>Home</title>` +
      `<metadata>${XMP_WITH_GPS}</metadata><rect width="40" height="30" fill="red"/></svg>`,
  )
  return [
    { name: 'a.webp', bytes: await readBytes(scratch().path('a.webp')) },
    { name: 'anim.webp', bytes: await readBytes(scratch().path('anim.webp')) },
    { name: 'a.gif', bytes: await readBytes(scratch().path('a.gif')) },
    { name: 'a.heic', bytes: await readBytes(scratch().path('a.heic')) },
    { name: 'a.avif', bytes: new Uint8Array(avif) },
    { name: 'a.svg', bytes: svg },
  ]
}

async function serverFor(mode: 'gps' | 'all') {
  const t = await startTestServer(
    { STRIP_METADATA: mode },
    { classifier: fakeClassifier('neutral').classifier, rescan: { intervalMs: 3_600_000 } },
  )
  return { t, user: await userWithKey(t) }
}

let files: { name: string; bytes: Bytes }[]
beforeAll(async () => {
  files = await uploads()
})

for (const mode of ['gps', 'all'] as const) {
  describe(`STRIP_METADATA=${mode}`, () => {
    let t: TestServer
    let user: Awaited<ReturnType<typeof userWithKey>>
    beforeAll(async () => {
      ;({ t, user } = await serverFor(mode))
    })
    afterAll(() => t.stop())

    test('WebP, GIF, HEIC, AVIF and SVG are served without location; sizes and animation as stored', async () => {
      const served: Bytes[] = []
      for (const { name, bytes: original } of files) {
        const res = await t.json('/api/v1/upload', {
          method: 'POST',
          headers: user.keyHeader,
          body: uploadForm([{ bytes: original, name }]),
        })
        expect([name, res.status]).toEqual([name, 201])
        const got = await t.fetch(new URL(res.body.url).pathname)
        expect(got.status).toBe(200)
        if (name.endsWith('.svg')) expect(got.headers.get('content-security-policy')).toContain('sandbox')
        const body = new Uint8Array(await got.arrayBuffer())
        expect([name, res.body.size]).toEqual([name, body.length])
        served.push(body)
      }
      const before = await readTagsOf(files.map((f) => f.bytes))
      const after = await readTagsOf(served)
      files.forEach(({ name }, i) => {
        expect([name, locationTags(before[i]!).length > 0]).toEqual([name, true])
        expect([name, locationTags(after[i]!)]).toEqual([name, []])
        if (mode === 'all') expect([name, metadataTags(after[i]!)]).toEqual([name, []])
      })
      // The animations keep their frames.
      for (const name of ['anim.webp', 'a.gif']) {
        const i = files.findIndex((f) => f.name === name)
        const [was, is] = await Promise.all([sharp(files[i]!.bytes).metadata(), sharp(served[i]!).metadata()])
        expect([name, is.pages, is.delay, is.loop]).toEqual([name, was.pages, was.delay, was.loop])
      }
    })

    test('a HEIF file with a second iinf is refused with the reason, nothing stored', async () => {
      const heic = files.find((f) => f.name === 'a.heic')!.bytes
      const b = Buffer.from(heic)
      const metaAt = b.indexOf('meta') - 4
      const iinfAt = b.indexOf('iinf') - 4
      const iinf = b.subarray(iinfAt, iinfAt + b.readUInt32BE(iinfAt))
      // The second iinf goes at meta's end (sizes fixed); nothing reads past the refusal, so offsets need not move.
      const metaEnd = metaAt + b.readUInt32BE(metaAt)
      const twice = Buffer.concat([b.subarray(0, metaEnd), iinf, b.subarray(metaEnd)])
      twice.writeUInt32BE(metaEnd - metaAt + iinf.length, metaAt)
      const used = async () => (await t.json('/api/v1/me', { headers: user.keyHeader })).body.storage.used
      const usedBefore = await used()
      const res = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: user.keyHeader,
        body: uploadForm([{ bytes: new Uint8Array(twice), name: 'twice.heic' }]),
      })
      expect(res.status).toBe(400)
      expect(res.body.error).toContain('two iinf boxes')
      expect(await used()).toBe(usedBefore)
    })
  })
}
