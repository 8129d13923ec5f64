/** Signed custom sizes: the endpoint, tampering, bounds, single flight, the per-IP cap, eviction, removal. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import sharp from 'sharp'
import { images } from '../../src/db/schema'
import { localMedia, type VariantSpec } from '../../src/media'
import { sweepOrphans } from '../../src/modules/images/orphans'
import { makeImage, makeNoisePng } from '../fixtures'
import {
  eventually,
  jsonBody,
  makeAdmin,
  startTestServer,
  storedKeys,
  type TestServer,
  testClock,
  userWithKey,
} from '../helpers'
import { countingMedia, pathOf, upload } from './support'

const clock = testClock()
const counting = countingMedia()
let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let other: Awaited<ReturnType<typeof userWithKey>>
let image: { id: string; url: string }
let second: { id: string }

beforeAll(async () => {
  // The cap has its own server (below): here it stays out of the way.
  t = await startTestServer({ VARIANTS_MADE_PER_SECOND: '1000' }, { media: counting.media })
  owner = await userWithKey(t)
  other = await userWithKey(t)
  image = await upload(t, owner.keyHeader, await makeImage('jpeg', 1000, 600), 'a.jpg')
  second = await upload(t, owner.keyHeader, await makeImage('jpeg', 900, 600, 2), 'b.jpg')
})
afterAll(() => t.stop())

const sign = (id: string, body: Record<string, unknown>, headers: Record<string, string> = owner.keyHeader) =>
  t.json(`/api/v1/image/${id}/variants`, { method: 'POST', ...jsonBody(body, headers) })

describe('POST /api/v1/image/:id/variants', () => {
  test('answers a signed URL that serves the size asked for', async () => {
    const res = await sign(image.id, { width: 300, height: 300, fit: 'cover', format: 'webp' })
    expect(res.status).toBe(200)
    expect(res.body.url).toStartWith(`${t.url}/cdn/custom/${image.id}.webp?`)
    const got = await t.fetch(pathOf(res.body.url))
    expect(got.status).toBe(200)
    expect(got.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    const meta = await sharp(new Uint8Array(await got.arrayBuffer())).metadata()
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 300, 300])
  })

  test('width alone: the width bounds it, never enlarged', async () => {
    const res = await sign(image.id, { width: 2000, format: 'png' })
    const meta = await sharp(new Uint8Array(await (await t.fetch(pathOf(res.body.url))).arrayBuffer())).metadata()
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 1000, 600])
  })

  test('another account: 404; an admin: a URL; no key: 401', async () => {
    const body = { width: 100, format: 'jpg' }
    expect((await sign(image.id, body, other.keyHeader)).status).toBe(404)
    expect((await sign('ZZZZZZZZ', body)).status).toBe(404)
    expect((await sign(image.id, body, {})).status).toBe(401)
    const admin = await userWithKey(t)
    await makeAdmin(t, admin.user.id)
    expect((await sign(image.id, body, admin.keyHeader)).status).toBe(200)
  })

  test('bounds: sides 16-4096, the listed fits and formats', async () => {
    for (const body of [
      { width: 15, format: 'webp' },
      { width: 4097, format: 'webp' },
      { width: 100, height: 15, format: 'webp' },
      { width: 100, height: 4097, format: 'webp' },
      { width: 100.5, format: 'webp' },
      { width: 100, fit: 'stretch', format: 'webp' },
      { width: 100, format: 'gif' },
      { width: 100 },
      { format: 'webp' },
    ]) {
      const res = await sign(image.id, body)
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
    expect((await sign(image.id, { width: 16, height: 4096, fit: 'fill', format: 'avif' })).status).toBe(200)
  })
})

describe('OpenAPI', () => {
  test('documents the endpoint with its bounds, behind an API key', async () => {
    const doc = (await t.json('/swagger/json')).body
    const op = doc.paths['/api/v1/image/{id}/variants'].post
    expect(op.security).toEqual([{ apiKey: [] }])
    const schema = op.requestBody.content['application/json'].schema
    expect(schema.properties.width).toMatchObject({ minimum: 16, maximum: 4096 })
    expect(schema.required).toEqual(['width', 'format'])
    expect(Object.keys(op.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '413',
      '422',
      '429',
      '500',
      '503',
      '507',
    ])
  })
})

describe('tampering', () => {
  test('any change to the id, format, parameters or signature: 403 { error }', async () => {
    const res = await sign(image.id, { width: 200, height: 120, fit: 'contain', format: 'jpg' })
    const good = pathOf(res.body.url)
    const signature = new URL(res.body.url).searchParams.get('s')!
    const flipped = signature.slice(0, -1) + (signature.endsWith('A') ? 'B' : 'A')
    // Made and stored first: a URL served before is remembered, and only that exact URL.
    expect((await t.fetch(good)).status).toBe(200)
    expect((await t.fetch(good)).status).toBe(200)
    for (const bad of [
      good.replace('w=200', 'w=201'),
      good.replace('w=200', 'w=0200'),
      good.replace('h=120', 'h=121'),
      good.replace('&h=120', ''),
      good.replace('fit=contain', 'fit=cover'),
      good.replace('.jpg?', '.png?'),
      good.replace(image.id, second.id),
      good.replace(`s=${signature}`, `s=${flipped}`),
      good.replace(`&s=${signature}`, ''),
      `${good}&x=1`,
    ]) {
      const answer = await t.json(bad)
      expect({ bad, status: answer.status }).toEqual({ bad, status: 403 })
      expect(typeof answer.body.error).toBe('string')
    }
    expect((await t.fetch(good)).status).toBe(200)
  })
})

describe('made once', () => {
  test('20 concurrent first requests make one variant; later requests are served from storage', async () => {
    const res = await sign(image.id, { width: 640, height: 360, fit: 'cover', format: 'avif' })
    const before = counting.counter.variantJobs
    const answers = await Promise.all(Array.from({ length: 20 }, () => t.fetch(pathOf(res.body.url))))
    const bodies = await Promise.all(answers.map(async (a) => new Uint8Array(await a.arrayBuffer())))
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200))
    for (const body of bodies) expect(body).toEqual(bodies[0])
    expect(counting.counter.variantJobs - before).toBe(1)
    expect((await t.fetch(pathOf(res.body.url))).status).toBe(200)
    expect((await storedKeys(t)).filter((k) => k.startsWith(`variants/${image.id}w640h360cover`))).toHaveLength(1)
    expect(counting.counter.variantJobs - before).toBe(1)
  })
})

describe('per-IP cap on sizes made', () => {
  test('past VARIANTS_MADE_PER_SECOND: 429 with Retry-After, signed sizes and presets alike; stored ones are not capped', async () => {
    const capped = await startTestServer({ VARIANTS_MADE_PER_SECOND: '3' }, { now: clock.now })
    try {
      const user = await userWithKey(capped)
      const img = await upload(capped, user.keyHeader, await makeImage('jpeg', 300, 200), 'c.jpg')
      const urls: string[] = []
      for (const width of [101, 102, 103, 104]) {
        const res = await capped.json(`/api/v1/image/${img.id}/variants`, {
          method: 'POST',
          ...jsonBody({ width, format: 'webp' }, user.keyHeader),
        })
        urls.push(pathOf(res.body.url))
      }
      clock.set(Date.now())
      for (const url of urls.slice(0, 3)) expect((await capped.fetch(url)).status).toBe(200)
      const refused = await capped.json(urls[3])
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
      expect(typeof refused.body.error).toBe('string')
      expect((await capped.fetch(urls[0])).status).toBe(200)
      // A preset not made yet is work of the same kind: refused in this window, made in the next.
      expect((await capped.fetch(`/cdn/small/${img.id}.jpg`)).status).toBe(429)
      // The thumbnail was made at upload: nothing to make.
      expect((await capped.fetch(`/cdn/medium/${img.id}.webp`)).status).toBe(200)
      clock.set(clock.now() + 1000)
      expect((await capped.fetch(urls[3])).status).toBe(200)
      expect((await capped.fetch(`/cdn/small/${img.id}.jpg`)).status).toBe(200)
      for (const _ of [1, 2, 3, 4, 5]) expect((await capped.fetch(`/cdn/small/${img.id}.jpg`)).status).toBe(200)
    } finally {
      clock.reset()
      await capped.stop()
    }
  })
})

describe('removed with the image', () => {
  test('deleting an image deletes its variants', async () => {
    const gone = await upload(t, owner.keyHeader, await makeImage('png', 400, 300, 5), 'gone.png')
    const signed = await sign(gone.id, { width: 50, format: 'jpg' })
    expect((await t.fetch(pathOf(signed.body.url))).status).toBe(200)
    expect((await t.fetch(`/cdn/large/${gone.id}.avif`)).status).toBe(200)
    expect((await storedKeys(t)).filter((k) => k.startsWith(`variants/${gone.id}`))).toHaveLength(2)
    expect((await t.fetch(`/api/v1/image/${gone.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(200)
    await eventually(async () => (await storedKeys(t)).every((k) => !k.includes(gone.id)), 10_000, 'variants removed')
    expect((await t.fetch(pathOf(signed.body.url))).status).toBe(404)
  })
})

describe('VARIANT_STORAGE_LIMIT', () => {
  test('least recently used variants go first; the upload thumbnail does not count', async () => {
    // The second is the largest, so the limit is exactly the first two: a thumbnail counted would evict at once.
    const specs: VariantSpec[] = [200, 220, 210].map((width) => ({ width, fit: 'inside', format: 'png' }))
    // The sizes the variants will have, made by the same media code from the same bytes.
    const noise = await makeNoisePng(400)
    const dir = join(import.meta.dir, '..', '..', '.scratch')
    await Bun.write(join(dir, 'noise.png'), noise)
    const media = localMedia({ maxPixels: 1e8, maxDecodeBytes: 1e8, stripMetadata: 'gps' })
    const sizes: number[] = []
    for (const [i, spec] of specs.entries()) {
      await media.variant(join(dir, 'noise.png'), spec, join(dir, `noise-${i}.png`))
      sizes.push(Bun.file(join(dir, `noise-${i}.png`)).size)
    }
    const [a, b, c] = sizes
    expect(b).toBeGreaterThan(c)
    const lru = await startTestServer({ VARIANT_STORAGE_LIMIT: String(Math.max(a + b, a + c)) }, { now: clock.now })
    try {
      const user = await userWithKey(lru)
      const img = await upload(lru, user.keyHeader, noise, 'noise.png')
      const urls: string[] = []
      for (const spec of specs) {
        const res = await lru.json(`/api/v1/image/${img.id}/variants`, {
          method: 'POST',
          ...jsonBody(spec, user.keyHeader),
        })
        urls.push(pathOf(res.body.url))
      }
      const variantKeys = async () => (await storedKeys(lru)).filter((k) => k.startsWith('variants/'))
      const start = Date.now()
      clock.set(start)
      expect((await lru.fetch(urls[0])).status).toBe(200)
      clock.set(start + 1000)
      expect((await lru.fetch(urls[1])).status).toBe(200)
      expect(await variantKeys()).toHaveLength(2)
      clock.set(start + 2000)
      expect((await lru.fetch(urls[0])).status).toBe(200) // the first is now the more recently used
      clock.set(start + 3000)
      expect((await lru.fetch(urls[2])).status).toBe(200)
      expect(await variantKeys()).toEqual([`variants/${img.id}w200h0inside.png`, `variants/${img.id}w210h0inside.png`])
      // The evicted one is made again on request, and stored again.
      expect((await lru.fetch(urls[1])).status).toBe(200)
      expect(await variantKeys()).toContain(`variants/${img.id}w220h0inside.png`)
    } finally {
      clock.reset()
      await lru.stop()
    }
  })
})

describe('the orphan sweep', () => {
  test('keeps stored variants; removes those whose image row went without them', async () => {
    const kept = await upload(t, owner.keyHeader, await makeImage('png', 300, 300, 8), 'k.png')
    expect((await t.fetch(`/cdn/small/${kept.id}.webp`)).status).toBe(200)
    const sweep = () =>
      sweepOrphans(t.server.db, t.server.deps.storage, join(t.dataDir, 'tmp'), { now: Date.now() + 86_400_000 })
    await sweep()
    expect(await storedKeys(t)).toContain(`variants/${kept.id}w320h320inside.webp`)
    const jobs = counting.counter.variantJobs
    expect((await t.fetch(`/cdn/small/${kept.id}.webp`)).status).toBe(200)
    expect(counting.counter.variantJobs).toBe(jobs)
    // A row removed behind the service's back (a crash between row and files): the next sweep takes the rest.
    await t.server.db.delete(images).where(eq(images.id, kept.id))
    await sweep()
    expect((await storedKeys(t)).filter((k) => k.includes(kept.id))).toEqual([])
  })
})
