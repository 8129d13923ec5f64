import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { type Bytes, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, whileHealthy } from '../helpers'
import { locationTags, readTagsOf } from '../media/exiftool'
import { gpsEntriesPng, strayZeroJpeg, xmpBombPng } from '../media/hostile-files'

// The hostile metadata files against a live server, as an anonymous visitor sends them: each is stored
// without its metadata (the stripper drops what it does not keep, unread: nothing is inflated, no GPS directory is
// walked), judged by exiftool on what /cdn serves, and /healthz keeps answering while the upload is processed.

sharp.cache(false)

let ip = 0
/** An anonymous web upload, each from an address of its own (no window is shared), while /healthz is polled. */
const uploadWhileHealthy = (t: TestServer, bytes: Uint8Array, name: string) =>
  whileHealthy(t, () =>
    t.json('/api/upload', {
      method: 'POST',
      headers: { 'x-forwarded-for': `198.51.100.${++ip}` },
      body: uploadForm([{ bytes: bytes as Bytes, name }]),
    }),
  )

const served = async (t: TestServer, url: string) =>
  new Uint8Array(await (await t.fetch(new URL(url).pathname)).arrayBuffer())

for (const mode of ['gps', 'all'] as const) {
  describe(`STRIP_METADATA=${mode}`, () => {
    let t: TestServer
    beforeAll(async () => {
      t = await startTestServer({ TRUST_PROXY: 'true', STRIP_METADATA: mode })
    })
    afterAll(() => t.stop())

    test('a zTXt XMP bomb, 10,000 GPS entries over 6 MB, a stray byte between markers: stored without location', async () => {
      for (const [name, original] of [
        ['bomb.png', await xmpBombPng()],
        ['entries.png', await gpsEntriesPng()],
        ['stray.jpg', await strayZeroJpeg()],
      ] as const) {
        const res = await uploadWhileHealthy(t, original, name)
        expect([name, res.status, res.body.error]).toEqual([name, 201, undefined])
        const bytes = await served(t, res.body.url)
        // (exiftool itself stalls on the 6 MB directory of the original: only what is stored is read.)
        const [after] = await readTagsOf([bytes])
        expect([name, locationTags(after!)]).toEqual([name, []])
        expect([name, res.body.size, bytes.length < original.length]).toEqual([name, bytes.length, true])
      }
    })
  })
}
