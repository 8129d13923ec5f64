import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { LOCATION_UNSAFE } from '../../src/media/exif'
import { uploadForm } from '../fixtures'
import { startTestServer, storedKeys, type TestServer, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'
import { locationTags, metadataTags, readTagsOf } from './exiftool'
import { scratchDir } from './helpers'
import { photo } from './hostile-files'
import { craftedJpegs, craftedPngs, craftedTiffs } from './metadata/crafted'
import { pixels, type Sample, toolCorpus } from './metadata/photos'

// End to end: the JPEG, PNG and TIFF corpus (files of exiftool and ImageMagick, and the crafted forms of issue 33)
// uploaded through the real server, and what the world then gets from the direct link, read by exiftool.

sharp.cache(false)

type Bytes = Uint8Array<ArrayBuffer>
type Account = Awaited<ReturnType<typeof userWithKey>>

let scratch: Awaited<ReturnType<typeof scratchDir>>
let corpus: Sample[]
beforeAll(async () => {
  scratch = await scratchDir()
  corpus = [...(await toolCorpus(scratch.dir)), ...(await craftedJpegs()), ...(await craftedPngs()), ...craftedTiffs()]
})
afterAll(() => scratch.cleanup())

const EXT = { jpeg: 'jpg', png: 'png', tiff: 'tif' } as const

/** One server per STRIP_METADATA mode, each with an account. */
async function serverFor(mode: 'gps' | 'all' | 'none' | undefined) {
  const t = await startTestServer(
    { TRUST_PROXY: 'true', ...(mode ? { STRIP_METADATA: mode } : {}) },
    { classifier: fakeClassifier('neutral').classifier, rescan: { intervalMs: 3_600_000 } },
  )
  return { t, user: await userWithKey(t) }
}

async function upload(t: TestServer, user: Account, bytes: Uint8Array, name: string) {
  return t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm([{ bytes: bytes as Bytes, name }]),
  })
}

/** The bytes behind a link of an upload's answer. */
async function served(t: TestServer, link: string): Promise<Bytes> {
  const res = await t.fetch(new URL(link).pathname)
  expect(res.status).toBe(200)
  return new Uint8Array(await res.arrayBuffer())
}

/** Every sample uploaded one by one: the answer, the original, the stored bytes and thumbnail the links give. */
async function uploadAll(t: TestServer, user: Account, samples: Sample[]) {
  const out = []
  for (const s of samples) {
    const res = await upload(t, user, s.file, `${s.name.replace(/\W+/g, '-')}.${EXT[s.format]}`)
    expect([s.name, res.status, res.body.error]).toEqual([s.name, 201, undefined])
    out.push({
      ...s,
      body: res.body,
      stored: await served(t, res.body.url),
      thumb: await served(t, res.body.thumbnail),
    })
  }
  return out
}

for (const mode of [undefined, 'all'] as const) {
  describe(`STRIP_METADATA=${mode ?? 'gps (the default)'}`, () => {
    let t: TestServer
    let user: Account
    beforeAll(async () => {
      ;({ t, user } = await serverFor(mode))
    })
    afterAll(() => t.stop())

    test('every file of the corpus is accepted and served without location, with its pixels and orientation', async () => {
      const up = await uploadAll(t, user, corpus)
      const tags = await readTagsOf([...up.map((u) => u.file), ...up.map((u) => u.stored), ...up.map((u) => u.thumb)])
      for (const [i, u] of up.entries()) {
        const [before, after, thumb] = [tags[i]!, tags[up.length + i]!, tags[2 * up.length + i]!]
        expect([u.name, locationTags(before).length > 0]).toEqual([u.name, true])
        expect([u.name, locationTags(after), locationTags(thumb)]).toEqual([u.name, [], []])
        if (mode === 'all') expect([u.name, metadataTags(after)]).toEqual([u.name, []])
        const turned = Number(before['IFD0:Orientation'] ?? 1)
        if (turned > 1) expect([u.name, after['IFD0:Orientation']]).toEqual([u.name, turned])
        expect([u.name, (await pixels(u.stored)).equals(await pixels(u.file))]).toEqual([u.name, true])
        expect([u.name, u.body.size]).toEqual([u.name, u.stored.length])
      }
      const me = (await t.json('/api/v1/me', { headers: user.keyHeader })).body
      expect(me.storage.used).toBe(up.reduce((n, u) => n + u.stored.length, 0))
    })

    test('the web upload (anonymous) strips the same way', async () => {
      const camera = corpus.find((s) => s.format === 'jpeg')!
      const res = await t.json('/api/upload', {
        method: 'POST',
        headers: { 'x-forwarded-for': '192.0.2.10' },
        body: uploadForm([{ bytes: camera.file, name: 'anon.jpg' }]),
      })
      expect(res.status).toBe(201)
      const [after] = await readTagsOf([await served(t, res.body.url)])
      expect(locationTags(after!)).toEqual([])
      expect(after!['IFD0:Orientation']).toBe(6)
    })

    test('a file with nothing to remove is stored byte for byte', async () => {
      for (const [format, bytes] of [
        ['jpg', await photo(40, 30).jpeg().toBuffer()],
        ['png', await photo(40, 30).png().toBuffer()],
        ['tif', await photo(40, 30).tiff().toBuffer()],
      ] as const) {
        const res = await upload(t, user, bytes, `plain.${format}`)
        expect([format, res.status]).toEqual([format, 201])
        expect(await served(t, res.body.url)).toEqual(new Uint8Array(bytes))
      }
    })

    test('a file whose picture cannot be walked whole is refused with a 400 that says why, and nothing is stored', async () => {
      // A PNG cut in its IDAT: its header reads well, its picture cannot be rebuilt.
      const file = await photo(40, 30).png().toBuffer()
      const cut = file.subarray(0, file.indexOf('IDAT') + 40)
      const before = await storedKeys(t)
      const res = await upload(t, user, cut, 'cut.png')
      expect([res.status, res.body.error]).toEqual([
        400,
        `cut.png: ${LOCATION_UNSAFE} (a PNG IDAT chunk cut off by the end of the file)`,
      ])
      expect(await storedKeys(t)).toEqual(before)
    })
  })
}

describe('STRIP_METADATA=none', () => {
  let t: TestServer
  let user: Account
  beforeAll(async () => {
    ;({ t, user } = await serverFor('none'))
  })
  afterAll(() => t.stop())

  test('the upload is stored exactly as sent, location included; the thumbnail still carries nothing', async () => {
    const samples = corpus.filter((s) => s.name.startsWith('exiftool'))
    const up = await uploadAll(t, user, samples)
    const tags = await readTagsOf([...up.map((u) => u.stored), ...up.map((u) => u.thumb)])
    for (const [i, u] of up.entries()) {
      expect([u.name, u.stored]).toEqual([u.name, u.file])
      expect([u.name, locationTags(tags[i]!).length > 0]).toEqual([u.name, true])
      expect([u.name, metadataTags(tags[up.length + i]!)]).toEqual([u.name, []])
    }
  })
})
