import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { S3Client } from 'bun'
import { count } from 'drizzle-orm'
import sharp from 'sharp'
import { images } from '../../src/db/schema'
import { sweepOrphans } from '../../src/modules/images/orphans'
import { StorageUnavailableError } from '../../src/storage'
import { createS3Storage, PART_SIZE, RETRY_DELAYS_MS } from '../../src/storage/s3'
import { type Bytes, makeImage, svgImage, uploadForm } from '../fixtures'
import { makeAdmin, storedKeys, type TestServer, userWithKey } from '../helpers'
import { startServer } from '../pages/support'
import { S3_TEST_CREDENTIALS, type S3TestServer, spawnS3Server } from '../s3-server'

const MB = 1024 * 1024
let s3: S3TestServer
let bucket: S3Client
let scratch: string

beforeAll(async () => {
  s3 = await spawnS3Server()
  bucket = new S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, ...S3_TEST_CREDENTIALS })
  scratch = await mkdtemp(join(tmpdir(), 'imghost-s3test-'))
})
afterAll(async () => {
  await s3.kill()
  rmSync(s3.dir, { recursive: true, force: true })
  rmSync(scratch, { recursive: true, force: true })
})

const storageAt = (prefix: string, extra: { pageSize?: number } = {}) =>
  createS3Storage({ endpoint: s3.endpoint, bucket: s3.bucket, prefix, ...S3_TEST_CREDENTIALS, ...extra })

let n = 0
async function localFile(bytes: Uint8Array | string) {
  const path = join(scratch, `f${n++}`)
  await Bun.write(path, bytes)
  return path
}

describe('the S3 storage itself', () => {
  test('put copies a file in (the local file stays, the caller removes it); stat, exists, ranged reads, paged list, delete', async () => {
    const storage = storageAt('unit/', { pageSize: 2 })
    const ids = ['AAAAAAAA', 'BBBBBBBB', 'CCCCCCCC', 'DDDDDDDD', 'EEEEEEEE']
    for (const id of ids) {
      const path = await localFile(`bytes of ${id}`)
      await storage.put(`originals/${id}.png`, path)
      expect(await Bun.file(path).exists()).toBe(true)
    }
    // Someone else's object under the prefix is not listed; objects outside it are not seen at all.
    await bucket.write('unit/notes.txt', 'not an image key')
    await bucket.write('other/originals/FFFFFFFF.png', 'another prefix')

    expect(await storage.stat('originals/AAAAAAAA.png')).toMatchObject({ size: 'bytes of AAAAAAAA'.length })
    expect(await storage.stat('originals/ZZZZZZZZ.png')).toBeNull()
    expect(await storage.exists('originals/BBBBBBBB.png')).toBe(true)
    expect(await storage.exists('thumbs/BBBBBBBB.webp')).toBe(false)
    expect(await storage.file('originals/CCCCCCCC.png').slice(9, 13).text()).toBe('CCCC')
    expect((await bucket.stat('unit/originals/AAAAAAAA.png')).type).toBe('image/png')

    await s3.clearRequests()
    const listed: string[] = []
    for await (const key of storage.list()) listed.push(key)
    expect(listed).toEqual(ids.map((id) => `originals/${id}.png`))
    const pages = (await s3.requests()).filter((r) => r.query['list-type'] === '2')
    expect(pages.length).toBeGreaterThanOrEqual(3)
    expect(pages.every((r) => r.query.prefix === 'unit/')).toBe(true)

    await storage.delete('originals/AAAAAAAA.png')
    await storage.delete('originals/AAAAAAAA.png') // deleting what is gone is fine
    expect(await bucket.exists('unit/originals/AAAAAAAA.png')).toBe(false)
    expect(() => storage.file('../../etc/passwd')).toThrow()
  })

  test('transient failures are retried with backoff; a store that keeps failing gives up, bounded', async () => {
    const storage = storageAt('retry/')
    await s3.failNext(2)
    await s3.clearRequests()
    await storage.upload('originals/GGGGGGGG.png', await localFile('retried'))
    // Two answered 503 SlowDown, the third went through.
    expect((await s3.requests()).filter((r) => r.method === 'PUT')).toHaveLength(3)
    expect(await storage.stat('originals/GGGGGGGG.png')).toMatchObject({ size: 7 })
    // put looks for an existing object first (it never replaces one): that request is retried the same way.
    await s3.failNext(2)
    await s3.clearRequests()
    await storage.put('originals/GGGGGGG2.png', await localFile('retried'))
    expect((await s3.requests()).map((r) => r.method)).toEqual(['HEAD', 'HEAD', 'HEAD', 'PUT'])

    // Bounded by counting, not timing: one attempt more than there are delays, each retry after its delay in turn.
    await s3.failNext(RETRY_DELAYS_MS.length + 1)
    await s3.clearRequests()
    const sleep = spyOn(Bun, 'sleep')
    let error: any
    let slept: unknown[][]
    try {
      error = await storage.stat('originals/GGGGGGGG.png').catch((e) => e)
    } finally {
      slept = [...sleep.mock.calls]
      sleep.mockRestore()
    }
    expect(error).toBeInstanceOf(StorageUnavailableError)
    expect(String(error.message)).toContain('4 attempt(s)')
    expect(await s3.requests()).toHaveLength(RETRY_DELAYS_MS.length + 1)
    expect(slept).toEqual(RETRY_DELAYS_MS.map((ms) => [ms]))

    // Permanent errors are not retried.
    const noBucket = createS3Storage({
      endpoint: s3.endpoint,
      bucket: 'no-such-bucket',
      prefix: 'retry/',
      ...S3_TEST_CREDENTIALS,
    })
    await s3.clearRequests()
    expect(await noBucket.put('originals/HHHHHHHH.png', await localFile('x')).catch((e) => e)).toBeInstanceOf(
      StorageUnavailableError,
    )
    // The existence check (answered 404 without a body, read as "absent") and the PUT: neither retried.
    expect((await s3.requests()).map((r) => r.method)).toEqual(['HEAD', 'PUT'])
  })
})

/** A PNG of at least `bytes` bytes, stored without compression (fast to make, and its size is known in advance). */
async function bigPng(bytes: number) {
  const width = 4096
  const height = Math.ceil(bytes / (width * 3)) + 4
  const raw = Buffer.alloc(width * height * 3)
  for (let i = 0; i < raw.length; i += 997) raw[i] = i & 0xff
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .png({ compressionLevel: 0, adaptiveFiltering: false })
      .toBuffer(),
  ) as Bytes
}

describe('the service on a bucket (STORAGE=s3)', () => {
  let t: TestServer
  let owner: Awaited<ReturnType<typeof userWithKey>>
  let big: { id: string; url: string; thumbnail: string; size: number }
  let bigBytes: Bytes

  beforeAll(async () => {
    t = await startServer({ ...s3.env, S3_PREFIX: 'app/', MAX_FILE_SIZE: String(64 * MB) })
    owner = await userWithKey(t)
  })
  afterAll(() => t.stop())

  const cdnPath = (url: string) => new URL(url).pathname

  test('a 50 MB upload goes into the bucket as a multipart upload, whole', async () => {
    bigBytes = await bigPng(50 * MB)
    expect(bigBytes.length).toBeGreaterThan(50 * MB)
    await s3.clearRequests()
    const res = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: bigBytes, name: 'huge.png' }]),
    })
    expect(res.status).toBe(201)
    big = res.body
    expect(big.size).toBe(bigBytes.length)

    const object = `app/originals/${big.id}.png`
    expect((await bucket.stat(object)).size).toBe(bigBytes.length)
    const requests = (await s3.requests()).filter((r) => r.path === `/${s3.bucket}/${object}`)
    expect(requests.filter((r) => r.method === 'POST' && 'uploads' in r.query)).toHaveLength(1) // CreateMultipartUpload
    const parts = requests.filter((r) => r.method === 'PUT' && r.query.partNumber)
    expect(parts.length).toBe(Math.ceil(bigBytes.length / PART_SIZE))
    expect(requests.filter((r) => r.method === 'POST' && r.query.uploadId)).toHaveLength(1) // CompleteMultipartUpload
    // The thumbnail is small: one plain PUT.
    const thumb = (await s3.requests()).filter(
      (r) => r.path === `/${s3.bucket}/app/thumbs/${big.id}.webp` && r.method === 'PUT',
    )
    expect(thumb).toHaveLength(1)
    expect(thumb[0].query.partNumber).toBeUndefined()
    expect(await storedKeys(t)).toEqual([`originals/${big.id}.png`, `thumbs/${big.id}.webp`])
    // Nothing is left in the temp directory: the put moved the file into the bucket.
    expect(await Array.fromAsync(new Bun.Glob('**/*').scan(join(t.dataDir, 'tmp')))).toEqual([])
  }, 120_000)

  test('/cdn streams it from the bucket: Range reads become ranged GETs; conditional requests never reach the bucket', async () => {
    await s3.clearRequests()
    let res = await t.fetch(cdnPath(big.url), { headers: { range: 'bytes=30000000-30000999' } })
    expect(res.status).toBe(206)
    expect(res.headers.get('content-range')).toBe(`bytes 30000000-30000999/${bigBytes.length}`)
    expect(res.headers.get('content-length')).toBe('1000')
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bigBytes.slice(30000000, 30001000))
    const gets = (await s3.requests()).filter((r) => r.method === 'GET')
    expect(gets).toHaveLength(1)
    expect(gets[0].range).toBe('bytes=30000000-30000999')

    res = await t.fetch(cdnPath(big.url), { headers: { range: 'bytes=-100' } })
    expect(res.status).toBe(206)
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bigBytes.slice(-100))
    res = await t.fetch(cdnPath(big.url), { headers: { range: `bytes=${bigBytes.length}-` } })
    expect(res.status).toBe(416)
    expect(res.headers.get('content-range')).toBe(`bytes */${bigBytes.length}`)

    res = await t.fetch(cdnPath(big.url), { method: 'HEAD' })
    expect(res.status).toBe(200)
    expect(Number(res.headers.get('content-length'))).toBe(bigBytes.length)

    // The whole 50 MB streams through without being buffered (chunked: Bun drops Content-Length on streams).
    res = await t.fetch(cdnPath(big.url))
    expect(res.status).toBe(200)
    const whole = new Uint8Array(await res.arrayBuffer())
    expect(whole.length).toBe(bigBytes.length)
    expect(Bun.hash(whole)).toBe(Bun.hash(bigBytes))

    const etag = res.headers.get('etag')!
    await s3.clearRequests()
    res = await t.fetch(cdnPath(big.url), { headers: { 'if-none-match': etag } })
    expect(res.status).toBe(304)
    expect(await s3.requests()).toEqual([])

    res = await t.fetch(cdnPath(big.thumbnail))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/webp')
    expect(Number(res.headers.get('content-length'))).toBe((await bucket.stat(`app/thumbs/${big.id}.webp`)).size)
    expect((await sharp(new Uint8Array(await res.arrayBuffer())).metadata()).format).toBe('webp')
  }, 60_000)

  test('deleting the image removes both objects from the bucket', async () => {
    await s3.clearRequests()
    const res = await t.json(`/api/v1/image/${big.id}`, { method: 'DELETE', headers: owner.keyHeader })
    expect(res.status).toBe(200)
    expect(await bucket.exists(`app/originals/${big.id}.png`)).toBe(false)
    expect(await bucket.exists(`app/thumbs/${big.id}.webp`)).toBe(false)
    // Exactly these two objects (a transient failure under load may repeat a DELETE: retries are by design).
    expect([...new Set((await s3.requests()).filter((r) => r.method === 'DELETE').map((r) => r.path))].sort()).toEqual(
      [`/${s3.bucket}/app/originals/${big.id}.png`, `/${s3.bucket}/app/thumbs/${big.id}.webp`].sort(),
    )
    expect((await t.fetch(cdnPath(big.url))).status).toBe(404)
    expect(await storedKeys(t)).toEqual([])
  })

  test('a bucket that is down: uploads 503 with no row and no object; reads 503, never other bytes; back when it is', async () => {
    const kept = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 30, 1) }]),
      })
    ).body
    const doomed = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 30, 2) }]),
      })
    ).body
    const keptBytes = new Uint8Array(await (await t.fetch(cdnPath(kept.url))).arrayBuffer())
    const rows = async () => (await t.server.db.select({ n: count() }).from(images))[0].n
    const before = await rows()

    await s3.kill()
    try {
      // Answered (the retries are bounded: the test above), not hung.
      const up = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 30, 3) }]),
      })
      expect(up.status).toBe(503)
      expect(typeof up.body.error).toBe('string')
      expect(up.headers.get('retry-after')).toBe('5')
      expect(await rows()).toBe(before)
      const web = await t.json('/api/upload', {
        method: 'POST',
        body: uploadForm([{ bytes: await makeImage('png', 40, 30, 4) }]),
      })
      expect(web.status).toBe(503)
      expect(await rows()).toBe(before)

      for (const [path, method] of [
        [cdnPath(kept.url), 'GET'],
        [cdnPath(kept.thumbnail), 'GET'],
        [cdnPath(kept.url), 'HEAD'],
        // A size first requested: its original is read from the bucket to make it.
        [`/cdn/large/${kept.id}.jpg`, 'GET'],
      ]) {
        const res = await t.fetch(path, { method, headers: { range: 'bytes=0-99' } })
        expect(res.status).toBe(503)
        expect(res.headers.get('cache-control')).toBe('no-store')
        if (method === 'GET') expect(typeof (await res.json()).error).toBe('string')
      }
      // Blocking reads the original's bytes (their SHA-256) from the bucket: 503, and nothing is blocked or removed.
      await makeAdmin(t, owner.user.id)
      const block = await t.json(`/api/admin/images/${kept.id}/block`, {
        method: 'POST',
        headers: { ...owner.bearer, 'content-type': 'application/json' },
        body: '{}',
      })
      expect(block.status).toBe(503)
      expect(block.headers.get('retry-after')).toBe('5')
      // Metadata lives in SQLite: it is still answered.
      expect((await t.json(`/api/v1/image/${kept.id}`)).status).toBe(200)
      // A delete still succeeds: the row goes, the objects are left for the sweep.
      expect((await t.json(`/api/v1/image/${doomed.id}`, { method: 'DELETE', headers: owner.keyHeader })).status).toBe(
        200,
      )
    } finally {
      s3 = await spawnS3Server({ port: s3.port, dir: s3.dir })
    }

    const res = await t.fetch(cdnPath(kept.url))
    expect(res.status).toBe(200)
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(keptBytes)
    // The failed uploads left nothing behind; the deleted image's objects wait for the sweep, which removes them.
    expect(await storedKeys(t)).toEqual(
      [
        `originals/${doomed.id}.png`,
        `originals/${kept.id}.png`,
        `thumbs/${doomed.id}.webp`,
        `thumbs/${kept.id}.webp`,
      ].sort(),
    )
    // (As a sweep does once they are older than its grace period.)
    expect(await sweepOrphans(t.server.db, t.server.deps.storage, join(scratch, 'sweep-tmp'), { graceMs: 0 })).toBe(2)
    expect(await storedKeys(t)).toEqual([`originals/${kept.id}.png`, `thumbs/${kept.id}.webp`])
    expect(
      (
        await t.json('/api/v1/upload', {
          method: 'POST',
          headers: owner.keyHeader,
          body: uploadForm([{ bytes: await makeImage('png', 40, 30, 5) }]),
        })
      ).status,
    ).toBe(201)
  }, 60_000)
})

describe('S3_SERVE=redirect', () => {
  let t: TestServer
  let owner: Awaited<ReturnType<typeof userWithKey>>
  beforeAll(async () => {
    t = await startServer({ ...s3.env, S3_PREFIX: 'redirect/', S3_SERVE: 'redirect' })
    owner = await userWithKey(t)
  })
  afterAll(() => t.stop())

  test('/cdn answers 302 to a short-lived presigned URL; SVGs still stream with their CSP', async () => {
    const bytes = await makeImage('png', 50, 40, 9)
    const image = (
      await t.json('/api/v1/upload', { method: 'POST', headers: owner.keyHeader, body: uploadForm([{ bytes }]) })
    ).body
    const res = await t.fetch(new URL(image.url).pathname, { redirect: 'manual' })
    expect(res.status).toBe(302)
    const location = res.headers.get('location')!
    expect(location.startsWith(`${s3.endpoint}/${s3.bucket}/redirect/originals/${image.id}.png?`)).toBe(true)
    expect(new URL(location).searchParams.get('X-Amz-Expires')).toBe('600')
    expect(res.headers.get('cache-control')).toBe('public, max-age=300')

    const direct = await fetch(location)
    expect(direct.status).toBe(200)
    expect(direct.headers.get('content-type')).toBe('image/png')
    expect(new Uint8Array(await direct.arrayBuffer())).toEqual(bytes)
    const ranged = await fetch(location, { headers: { range: 'bytes=0-7' } })
    expect(ranged.status).toBe(206)
    expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(bytes.slice(0, 8))

    expect((await t.fetch(new URL(image.thumbnail).pathname, { redirect: 'manual' })).status).toBe(302)
    expect(
      (
        await t.fetch(new URL(image.url).pathname, {
          headers: { 'if-none-match': `"${image.id}-${image.size}"` },
          redirect: 'manual',
        })
      ).status,
    ).toBe(304)

    const svg = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: svgImage(), name: 'logo.svg' }]),
      })
    ).body
    const svgRes = await t.fetch(new URL(svg.url).pathname, { redirect: 'manual' })
    expect(svgRes.status).toBe(200)
    expect(svgRes.headers.get('content-security-policy')).toContain('sandbox')
    expect(await svgRes.text()).toContain('<svg')
  })
})
