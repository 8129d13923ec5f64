/** Presets on /cdn: sizes, formats, no upscaling, alpha, animation, the medium thumbnail, headers and the /cdn rules. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import sharp from 'sharp'
import { originalKey, thumbnailKey } from '../../src/storage'
import { type Bytes, makeAnimatedGif, makeImage } from '../fixtures'
import { eventually, jsonBody, startTestServer, storedKeys, type TestServer, testClock, userWithKey } from '../helpers'
import { heifEnc, turnedHeic } from '../media/heic-files'
import { countingMedia, upload } from './support'

const clock = testClock()
let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let big: { id: string; thumbnail: string }
let tiny: { id: string }
const counting = countingMedia()

const alphaPng = async (): Promise<Bytes> =>
  new Uint8Array(
    await sharp({ create: { width: 600, height: 400, channels: 4, background: { r: 10, g: 200, b: 30, alpha: 0.5 } } })
      .png()
      .toBuffer(),
  )

beforeAll(async () => {
  // The per-IP cap has its own test (signed.test.ts): here it stays out of the way.
  t = await startTestServer({ VARIANTS_MADE_PER_SECOND: '1000' }, { now: clock.now, media: counting.media })
  owner = await userWithKey(t)
  big = await upload(t, owner.keyHeader, await makeImage('jpeg', 1600, 1000), 'big.jpg')
  tiny = await upload(t, owner.keyHeader, await makeImage('png', 100, 80), 'tiny.png')
})
afterAll(() => t.stop())

async function get(path: string, init?: RequestInit) {
  const res = await t.fetch(path, init)
  const bytes = new Uint8Array(await res.arrayBuffer())
  return { res, bytes, meta: res.status === 200 ? await sharp(bytes, { animated: true }).metadata() : null }
}

// What sharp reads from the bytes themselves (AVIF is a HEIF container).
const SNIFFED = { webp: 'webp', avif: 'heif', jpg: 'jpeg', png: 'png' } as const
const MIME = { webp: 'image/webp', avif: 'image/avif', jpg: 'image/jpeg', png: 'image/png' } as const

describe('presets x formats', () => {
  const sizes = { small: [320, 200], medium: [500, 313], large: [1280, 800] } as const
  for (const [preset, [w, h]] of Object.entries(sizes)) {
    for (const format of ['webp', 'avif', 'jpg', 'png'] as const) {
      test(`${preset}.${format}: fits the box, the type its bytes say`, async () => {
        const { res, meta } = await get(`/cdn/${preset}/${big.id}.${format}`)
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toBe(MIME[format])
        expect(meta!.format).toBe(SNIFFED[format])
        expect([meta!.width, meta!.height]).toEqual([w, h])
      })
    }
  }

  test('a HEIC original (browsers cannot show it) is delivered as web formats, upright', async () => {
    // 800x600, stored turned a quarter as a phone's portrait photo: the presets follow the upright 600x800 picture.
    const heic = turnedHeic(await heifEnc(sharp(await makeImage('png', 800, 600))))
    const { id } = await upload(t, owner.keyHeader, heic, 'portrait.heic')
    for (const format of ['jpg', 'webp'] as const) {
      const { res, meta } = await get(`/cdn/small/${id}.${format}`)
      expect(res.status).toBe(200)
      expect(meta!.format).toBe(SNIFFED[format])
      expect([meta!.width, meta!.height]).toEqual([240, 320])
    }
  })

  test('never upscaled: a smaller original keeps its size in every preset', async () => {
    for (const preset of ['small', 'medium', 'large']) {
      const { meta } = await get(`/cdn/${preset}/${tiny.id}.webp`)
      expect([meta!.width, meta!.height]).toEqual([100, 80])
    }
  })

  test('alpha: kept in PNG and WebP, flattened in JPEG', async () => {
    const image = await upload(t, owner.keyHeader, await alphaPng(), 'alpha.png')
    expect((await get(`/cdn/small/${image.id}.png`)).meta!.hasAlpha).toBe(true)
    expect((await get(`/cdn/small/${image.id}.webp`)).meta!.hasAlpha).toBe(true)
    expect((await get(`/cdn/small/${image.id}.jpg`)).meta!.hasAlpha).toBe(false)
  })

  test('animation: frames kept in WebP; AVIF and JPEG take the first frame', async () => {
    const image = await upload(t, owner.keyHeader, await makeAnimatedGif(800, 600, 3), 'anim.gif')
    const webp = (await get(`/cdn/small/${image.id}.webp`)).meta!
    expect(webp.pages).toBe(3)
    expect([webp.width, webp.pageHeight]).toEqual([320, 240])
    expect((await get(`/cdn/small/${image.id}.avif`)).meta!.pages ?? 1).toBe(1)
    expect((await get(`/cdn/small/${image.id}.jpg`)).meta!.pages ?? 1).toBe(1)
  })
})

describe('/cdn/medium', () => {
  test('the WebP is the upload-time thumbnail, byte for byte, under its link', async () => {
    expect(new URL(big.thumbnail).pathname).toBe(`/cdn/medium/${big.id}.webp`)
    const jobs = counting.counter.variantJobs
    const { res, bytes } = await get(`/cdn/medium/${big.id}.webp`)
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe(`"${big.id}-thumb"`)
    const stored = new Uint8Array(await t.server.deps.storage.file(thumbnailKey(big.id)).arrayBuffer())
    expect(bytes).toEqual(stored)
    expect(counting.counter.variantJobs).toBe(jobs)
  })
})

describe('headers and rules as /cdn', () => {
  test('immutable caching, ETag and 304, HEAD, ranges (first request and cached)', async () => {
    for (const _ of [1, 2]) {
      const path = `/cdn/large/${tiny.id}.jpg`
      const { res, bytes } = await get(path)
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('accept-ranges')).toBe('bytes')
      const etag = res.headers.get('etag')!
      expect(etag).toMatch(/^"/)
      expect((await t.fetch(path, { headers: { 'if-none-match': etag } })).status).toBe(304)
      const head = await t.fetch(path, { method: 'HEAD' })
      expect(Number(head.headers.get('content-length'))).toBe(bytes.length)
      const part = await t.fetch(path, { headers: { range: 'bytes=2-11' } })
      expect(part.status).toBe(206)
      expect(part.headers.get('content-range')).toBe(`bytes 2-11/${bytes.length}`)
      expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(2, 12))
    }
  })

  test('private (by link) and NSFW images are served as their originals are', async () => {
    const hidden = await upload(t, owner.keyHeader, await makeImage('png', 200, 100, 3), 'p.png', {
      visibility: 'private',
      nsfw: 'true',
    })
    expect((await t.fetch(new URL(hidden.url).pathname)).status).toBe(200)
    expect((await get(`/cdn/small/${hidden.id}.webp`)).res.status).toBe(200)
  })

  test('an expired image: 404, and its variants go with it', async () => {
    const image = await upload(t, owner.keyHeader, await makeImage('png', 300, 200, 4), 'e.png')
    expect((await get(`/cdn/small/${image.id}.avif`)).res.status).toBe(200)
    const patched = await t.json(`/api/v1/image/${image.id}`, {
      method: 'PATCH',
      ...jsonBody({ expires: 'PT10M' }, owner.keyHeader),
    })
    expect(patched.status).toBe(200)
    clock.set(Date.now() + 11 * 60_000)
    try {
      expect((await get(`/cdn/small/${image.id}.avif`)).res.status).toBe(404)
      await t.server.services.images.sweepExpired()
      // The expiry sweep emits the removal; the variant's file goes right after.
      await eventually(async () => (await storedKeys(t)).every((k) => !k.includes(image.id)), 10_000, 'files removed')
    } finally {
      clock.reset()
    }
  })

  test('an original lost from storage: 404, nothing made', async () => {
    const image = await upload(t, owner.keyHeader, await makeImage('png', 300, 200, 6), 'lost.png')
    await t.server.deps.storage.delete(`originals/${image.id}.png`)
    const answer = await t.json(`/cdn/large/${image.id}.webp`)
    expect(answer.status).toBe(404)
    expect(typeof answer.body.error).toBe('string')
    expect((await storedKeys(t)).filter((k) => k.startsWith(`variants/${image.id}`))).toEqual([])
  })

  test('made from the stored original itself on local disk, from a removed temp copy out of a bucket', async () => {
    const image = await upload(t, owner.keyHeader, await makeImage('png', 300, 200, 7), 'source.png')
    const storage = t.server.deps.storage
    const key = originalKey(image.id, 'png')
    const before = await storage.file(key).bytes()
    expect((await t.fetch(`/cdn/small/${image.id}.jpg`)).status).toBe(200)
    const source = counting.counter.sources.at(-1)!
    if (storage.localPath) expect(source).toBe(storage.localPath(key))
    else {
      expect(source.startsWith(join(t.dataDir, 'tmp'))).toBe(true)
      expect(existsSync(source)).toBe(false)
    }
    // Read, never written: the original is stored as it was.
    expect(await storage.file(key).bytes()).toEqual(before)
  })

  test('unknown id, preset or format: 404', async () => {
    for (const path of [
      `/cdn/small/AAAAAAAA.webp`,
      `/cdn/huge/${big.id}.webp`,
      `/cdn/small/${big.id}.gif`,
      `/cdn/small/${big.id}.WEBP`,
      `/cdn/small/..%2f${big.id}.webp`,
    ]) {
      expect((await t.fetch(path)).status).toBe(404)
    }
  })
})
