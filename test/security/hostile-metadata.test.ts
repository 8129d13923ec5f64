import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import exifReader from 'exif-reader'
import sharp from 'sharp'
import { LOCATION_UNSAFE } from '../../src/media/exif'
import { uploadForm, type Bytes } from '../fixtures'
import { startTestServer, storedKeys, type TestServer } from '../helpers'
import { gpsEntriesPng, hasLatitudeBytes, strayZeroJpeg, xmpBombPng } from '../media/hostile-files'

// The hostile metadata files against a live server, as an anonymous visitor sends them: each is answered
// (refused, or stored without its location), nothing is stored for a refused one, and /healthz keeps answering
// while the upload is processed.

sharp.cache(false)

/** A generous bound, so it cannot flake; the tight figure lives in the bench. */
const HEALTHZ_BOUND_MS = 2000

let ip = 0
/** Sends an anonymous web upload and polls /healthz until it is answered; returns the answer and the slowest poll. */
async function uploadWhilePolling(t: TestServer, bytes: Uint8Array, name: string) {
  let done = false
  const upload = t
    .json('/api/upload', { method: 'POST', headers: { 'x-forwarded-for': `198.51.100.${++ip}` }, body: uploadForm([{ bytes: bytes as Bytes, name }]) })
    .finally(() => {
      done = true
    })
  let worst = 0
  let polls = 0
  do {
    const started = performance.now()
    const res = await t.fetch('/healthz')
    worst = Math.max(worst, performance.now() - started)
    polls++
    expect(res.status).toBe(200)
  } while (!done)
  return { res: await upload, worst, polls }
}

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
      const { res, worst, polls } = await uploadWhilePolling(t, await xmpBombPng(), 'bomb.png')
      expect(polls).toBeGreaterThan(0)
      expect(worst).toBeLessThan(HEALTHZ_BOUND_MS)
      if (mode === 'gps') {
        // GPS elements that never close cannot be removed with certainty: refused, nothing stored.
        expect(res.status).toBe(400)
        expect(res.body.error).toBe(`bomb.png: ${LOCATION_UNSAFE} (compressed metadata larger than allowed when inflated)`)
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
      const { res, worst } = await uploadWhilePolling(t, await gpsEntriesPng(), 'entries.png')
      expect(worst).toBeLessThan(HEALTHZ_BOUND_MS)
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
      const { res, worst } = await uploadWhilePolling(t, original, 'stray.jpg')
      expect(worst).toBeLessThan(HEALTHZ_BOUND_MS)
      expect([res.status, res.body.error]).toEqual([201, undefined])
      const { bytes, gps } = await gpsServed(t, res.body.url)
      expect(gps).toBeUndefined()
      expect(hasLatitudeBytes(bytes)).toBe(false)
      expect(bytes).not.toEqual(original)
      expect(res.body.size).toBe(bytes.length)
    })
  })
}
