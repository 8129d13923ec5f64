import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import exifReader from 'exif-reader'
import sharp from 'sharp'
import { LOCATION_UNSAFE } from '../../src/media/exif'
import { type Bytes, uploadForm } from '../fixtures'
import { startTestServer, storedKeys, type TestServer, whileHealthy } from '../helpers'
import { gpsEntriesPng, hasLatitudeBytes, strayZeroJpeg, xmpBombPng } from '../media/hostile-files'

// The hostile metadata files against a live server, as an anonymous visitor sends them: each is answered
// (refused, or stored without its location), nothing is stored for a refused one, and /healthz keeps answering
// while the upload is processed.

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

/** What is stored: rows (the gallery, which shows anonymous uploads) and files. */
async function stored(t: TestServer) {
  return { total: (await t.json('/api/gallery')).body.total as number, keys: await storedKeys(t) }
}

async function gpsServed(t: TestServer, url: string) {
  const bytes = new Uint8Array(await (await t.fetch(new URL(url).pathname)).arrayBuffer())
  const { exif } = await sharp(bytes).metadata()
  return { bytes, gps: exif ? exifReader(exif).GPSInfo : undefined }
}

for (const mode of ['gps', 'all'] as const) {
  describe(`STRIP_METADATA=${mode}`, () => {
    let t: TestServer
    beforeAll(async () => {
      t = await startTestServer({ TRUST_PROXY: 'true', STRIP_METADATA: mode })
    })
    afterAll(() => t.stop())

    test('a PNG whose zTXt XMP inflates to 196 KB of <a:GPS> is answered at once, /healthz answering meanwhile', async () => {
      const before = await stored(t)
      const res = await uploadWhileHealthy(t, await xmpBombPng(), 'bomb.png')
      if (mode === 'gps') {
        // GPS elements that never close cannot be removed with certainty: refused, nothing stored.
        expect(res.status).toBe(400)
        expect(res.body.error).toBe(
          `bomb.png: ${LOCATION_UNSAFE} (compressed metadata larger than allowed when inflated)`,
        )
        expect(await stored(t)).toEqual(before)
      } else {
        // 'all' drops the chunk without reading it.
        expect(res.status).toBe(201)
        const bytes = new Uint8Array(await (await t.fetch(new URL(res.body.url).pathname)).arrayBuffer())
        expect(Buffer.from(bytes).includes('zTXt')).toBe(false)
      }
    })

    test('a PNG whose eXIf GPS directory has 10,000 entries each claiming the rest of a 6 MB block', async () => {
      const before = await stored(t)
      const res = await uploadWhileHealthy(t, await gpsEntriesPng(), 'entries.png')
      if (mode === 'gps') {
        expect(res.status).toBe(400)
        expect(res.body.error).toBe(`entries.png: ${LOCATION_UNSAFE} (a GPS directory with too many entries)`)
        expect(await stored(t)).toEqual(before)
      } else {
        expect(res.status).toBe(201)
        expect((await gpsServed(t, res.body.url)).gps).toBeUndefined()
        expect(res.body.size).toBeLessThan(1_000_000) // the 6 MB eXIf is gone
      }
    })

    test('a JPEG with a stray 00 between markers and GPS in its Exif is served without GPS', async () => {
      const original = await strayZeroJpeg()
      const res = await uploadWhileHealthy(t, original, 'stray.jpg')
      expect([res.status, res.body.error]).toEqual([201, undefined])
      const { bytes, gps } = await gpsServed(t, res.body.url)
      expect(gps).toBeUndefined()
      expect(hasLatitudeBytes(bytes)).toBe(false)
      expect(bytes).not.toEqual(original)
      expect(res.body.size).toBe(bytes.length)
    })
  })
}
