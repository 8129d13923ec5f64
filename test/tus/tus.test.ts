import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import sharp from 'sharp'
import { type PreviousUpload, Upload, type UrlStorage } from 'tus-js-client'
import { tusUploads } from '../../src/db/schema'
import { makeImage, makeNoisePng } from '../fixtures'
import { eventually, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'

const MB = 1024 * 1024
const TUS = { 'tus-resumable': '1.0.0' }
const OCTETS = { 'content-type': 'application/offset+octet-stream' }

const b64 = (s: string) => Buffer.from(s).toString('base64')
const metadata = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(',')

/** The raw protocol, request by request. */
function tusClient(t: TestServer, endpoint: string, auth: Record<string, string> = {}) {
  return {
    create: (length: number | string, fields: Record<string, string> = {}, extra: Record<string, string> = {}) =>
      t.fetch(endpoint, {
        method: 'POST',
        headers: { ...TUS, ...auth, 'upload-length': String(length), 'upload-metadata': metadata(fields), ...extra },
      }),
    head: (url: string, headers = auth) => fetch(url, { method: 'HEAD', headers: { ...TUS, ...headers } }),
    patch: (url: string, offset: number, bytes: Uint8Array, headers = auth) =>
      fetch(url, {
        method: 'PATCH',
        headers: { ...TUS, ...OCTETS, ...headers, 'upload-offset': String(offset) },
        body: bytes as Uint8Array<ArrayBuffer>,
      }),
    remove: (url: string, headers = auth) => fetch(url, { method: 'DELETE', headers: { ...TUS, ...headers } }),
    result: (url: string, headers = auth) => fetch(url, { headers }),
    /** Creates and sends the file in one PATCH; returns the last answer. */
    async upload(bytes: Uint8Array, fields: Record<string, string> = {}) {
      const created = await this.create(bytes.length, fields)
      if (created.status !== 201) return created
      return this.patch(created.headers.get('location')!, 0, bytes)
    },
  }
}

const tusFiles = (t: TestServer) => readdirSync(join(t.dataDir, 'tus'))

/** tus-js-client keeps upload URLs here between instances, as localStorage would in a browser. */
function memoryUrlStorage(): UrlStorage & { entries: Map<string, PreviousUpload> } {
  const entries = new Map<string, PreviousUpload>()
  let n = 0
  return {
    entries,
    findAllUploads: async () => [...entries.values()],
    findUploadsByFingerprint: async (fp: string) =>
      [...entries.entries()].filter(([key]) => key.startsWith(`${fp}::`)).map(([, v]) => v),
    removeUpload: async (key: string) => void entries.delete(key),
    addUpload: async (fp: string, upload: PreviousUpload) => {
      const key = `${fp}::${n++}`
      entries.set(key, upload)
      return key
    },
  }
}

describe('tus-js-client: a 60 MB image in 5 MB chunks, interrupted and resumed', () => {
  let t: TestServer
  beforeAll(async () => {
    // 60 MB is over the 50 MB default per-file limit.
    t = await startTestServer({ MAX_FILE_SIZE: String(64 * MB) })
  })
  afterAll(() => t.stop())

  test('the upload resumes where it stopped and the image arrives whole, with its thumbnail', async () => {
    const user = await userWithKey(t)
    // Noise, stored uncompressed: about 3 bytes a pixel, so 4600x4600 is just over 60 MB.
    const side = 4600
    const noise = Buffer.from(crypto.getRandomValues(new Uint8Array(side * side * 3)).buffer)
    const file = await sharp(noise, { raw: { width: side, height: side, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer()
    expect(file.length).toBeGreaterThan(60 * MB)

    const urlStorage = memoryUrlStorage()
    const options = {
      endpoint: `${t.url}/api/v1/tus`,
      chunkSize: 5 * MB,
      headers: user.keyHeader,
      metadata: { filename: 'big-noise.png', visibility: 'private' },
      fingerprint: async () => 'big-noise-fingerprint',
      urlStorage,
      retryDelays: [0, 200, 500, 1000, 2000],
    }

    // First attempt: aborted in the middle of the fourth chunk (the PATCH is cut off mid-body).
    let chunks = 0
    const first = new Upload(file, {
      ...options,
      onChunkComplete: () => void chunks++,
      onProgress(sent) {
        if (sent > 3.5 * 5 * MB) void first.abort()
      },
    })
    const stopped = new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (chunks >= 3 && first.url) {
          clearInterval(timer)
          resolve()
        }
      }, 20)
      first.options.onError = (error) => {
        clearInterval(timer)
        reject(error)
      }
    })
    first.start()
    await stopped
    expect(first.url).toStartWith(`${t.url}/api/v1/tus/`)
    // Once the server has seen the cut-off PATCH end, the upload answers again.
    const headNow = () => tusClient(t, '/api/v1/tus').head(first.url!, user.keyHeader)
    await eventually(async () => (await headNow()).status === 200, undefined, 'the cut-off PATCH to end')
    const head = await headNow()
    expect(head.status).toBe(200)
    const offset = Number(head.headers.get('upload-offset'))
    expect(offset).toBeGreaterThanOrEqual(3 * 5 * MB)
    expect(offset).toBeLessThan(file.length)
    expect(head.headers.get('upload-length')).toBe(String(file.length))
    // Nothing counts until it is finished.
    const usage = (await t.json('/api/v1/me', { headers: user.keyHeader })).body
    expect(usage.rateLimit.used).toBe(0)
    expect(usage.storage.used).toBe(0)
    expect(usage.totalImages).toBe(0)

    // Second attempt: a new client instance finds the upload by its fingerprint and resumes it.
    let lowest = Infinity
    const finished = Promise.withResolvers<{ body: string; status: number }>()
    const second = new Upload(file, {
      ...options,
      onProgress: (sent) => {
        lowest = Math.min(lowest, sent)
      },
      onSuccess: ({ lastResponse }) =>
        finished.resolve({ body: lastResponse.getBody(), status: lastResponse.getStatus() }),
      onError: finished.reject,
    })
    const previous = await second.findPreviousUploads()
    expect(previous.length).toBe(1)
    second.resumeFromPreviousUpload(previous[0])
    second.start()
    const result = await finished.promise
    // It went on from the offset the server had, never from the start.
    expect(lowest).toBeGreaterThanOrEqual(offset)
    expect(result.status).toBe(200)
    const answer = JSON.parse(result.body)
    expect(answer).toMatchObject({
      success: true,
      width: side,
      height: side,
      size: file.length,
      mime: 'image/png',
      visibility: 'private',
      filename: 'big-noise.png',
    })
    expect(answer.url).toBe(`${t.url}/cdn/${answer.id}.png`)

    // The image exists with the right size, and the bytes are the ones sent.
    const details = await t.json(`/api/v1/image/${answer.id}`)
    expect(details.body.data).toMatchObject({ size: file.length, width: side, height: side })
    const original = new Uint8Array(await (await fetch(answer.url)).arrayBuffer())
    expect(original.length).toBe(file.length)
    expect(Bun.hash(original)).toBe(Bun.hash(file))
    const thumbnail = await fetch(answer.thumbnail)
    expect(thumbnail.status).toBe(200)
    expect(thumbnail.headers.get('content-type')).toBe('image/webp')
    const meta = await sharp(Buffer.from(await thumbnail.arrayBuffer())).metadata()
    expect(Math.max(meta.width!, meta.height!)).toBe(500)

    // The answer stays available on the upload URL (less its delete page link, whose token is stored only as a
    // hash); the data file is gone; the upload now counts.
    const again = await fetch(first.url!, { headers: user.keyHeader })
    expect(again.status).toBe(200)
    const { deletePage, ...kept } = answer
    expect(typeof deletePage).toBe('string')
    expect(await again.json()).toEqual(kept)
    expect(tusFiles(t)).toEqual([])
    const after = (await t.json('/api/v1/me', { headers: user.keyHeader })).body
    expect(after.rateLimit.used).toBe(1)
    expect(after.storage.used).toBe(file.length)
  }, 120_000)
})

describe('the protocol', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer()
  })
  afterAll(() => t.stop())

  test('OPTIONS: version, extensions and the maximum size', async () => {
    for (const path of ['/api/v1/tus', '/api/tus']) {
      const res = await t.fetch(path, { method: 'OPTIONS' })
      expect(res.status).toBe(204)
      expect(res.headers.get('tus-version')).toBe('1.0.0')
      expect(res.headers.get('tus-resumable')).toBe('1.0.0')
      expect(res.headers.get('tus-extension')!.split(',').sort()).toEqual(['creation', 'expiration', 'termination'])
      expect(res.headers.get('tus-max-size')).toBe(String(50 * MB))
    }
  })

  test('creation: 201 with Location and Upload-Expires (24 hours); HEAD gives offset, length and metadata', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const before = Date.now()
    const created = await tus.create(1000, { filename: 'été.png' })
    expect(created.status).toBe(201)
    const url = created.headers.get('location')!
    expect(url).toMatch(new RegExp(`^${t.url}/api/v1/tus/[A-Za-z0-9]{32}$`))
    expect(created.headers.get('tus-resumable')).toBe('1.0.0')
    const expires = Date.parse(created.headers.get('upload-expires')!)
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 24 * 3600_000 - 1000)
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3600_000)
    const head = await tus.head(url)
    expect(head.status).toBe(200)
    expect(head.headers.get('upload-offset')).toBe('0')
    expect(head.headers.get('upload-length')).toBe('1000')
    expect(head.headers.get('upload-metadata')).toBe(`filename ${b64('été.png')}`)
    expect(head.headers.get('cache-control')).toBe('no-store')
  })

  test('chunks at the right offsets; 409 on a wrong offset; the last PATCH answers like a multipart upload', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const png = await makeImage('png', 120, 90)
    const url = (await tus.create(png.length, { filename: 'parts.png', nsfw: 'true' })).headers.get('location')!
    const one = await tus.patch(url, 0, png.slice(0, 300))
    expect(one.status).toBe(204)
    expect(one.headers.get('upload-offset')).toBe('300')
    expect(one.headers.get('upload-expires')).toBeTruthy()
    const wrong = await tus.patch(url, 0, png.slice(0, 300))
    expect(wrong.status).toBe(409)
    expect(wrong.headers.get('upload-offset')).toBe('300')
    expect(typeof (await wrong.json()).error).toBe('string')
    const pending = await tus.result(url)
    expect(pending.status).toBe(409)
    const last = await tus.patch(url, 300, png.slice(300))
    expect(last.status).toBe(200)
    expect(last.headers.get('upload-offset')).toBe(String(png.length))
    expect(last.headers.get('ratelimit-remaining')).toBe('99')
    const body = await last.json()
    expect(Object.keys(body).sort()).toEqual(
      [
        'success',
        'id',
        'url',
        'thumbnail',
        'viewer',
        'delete',
        'deletePage',
        'width',
        'height',
        'size',
        'mime',
        'visibility',
        'nsfw',
        'filename',
        'expiresAt',
      ].sort(),
    )
    expect(body).toMatchObject({
      success: true,
      width: 120,
      height: 90,
      size: png.length,
      nsfw: true,
      filename: 'parts.png',
    })
    // A client that lost that answer: HEAD says finished, resending the final offset (or GET) gives it again, but
    // for the delete page link: its token is stored only as a hash.
    expect((await tus.head(url)).headers.get('upload-offset')).toBe(String(png.length))
    const replay = await tus.patch(url, png.length, new Uint8Array(0))
    expect(replay.status).toBe(200)
    const { deletePage, ...kept } = body
    expect(typeof deletePage).toBe('string')
    expect(await replay.json()).toEqual(kept)
    expect(await (await tus.result(url)).json()).toEqual(kept)
    // More data after the end: refused.
    expect((await tus.patch(url, png.length, png.slice(0, 10))).status).toBe(409)
  })

  test('a PATCH cut off mid-body keeps the bytes that arrived; the client resumes from there', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const png = await makeNoisePng(300)
    const url = (await tus.create(png.length, { filename: 'cut.png' })).headers.get('location')!
    // A streamed body that sends 100 KB and then stalls; the client gives up on it.
    const controller = new AbortController()
    const sent = 100 * 1024
    const body = new ReadableStream<Uint8Array>({
      start(stream) {
        stream.enqueue(png.slice(0, sent))
      },
    })
    const cut = fetch(url, {
      method: 'PATCH',
      headers: { ...TUS, ...OCTETS, ...user.keyHeader, 'upload-offset': '0' },
      body,
      signal: controller.signal,
      duplex: 'half',
    } as RequestInit)
    // The client gives up once the server has the 100 KB (in the upload's data file).
    const data = join(t.dataDir, 'tus', new URL(url).pathname.split('/').pop()!)
    await eventually(() => existsSync(data) && statSync(data).size === sent, undefined, 'the 100 KB to arrive')
    controller.abort()
    await cut.catch(() => {})
    // The server notices the end of the request and releases the upload, keeping what arrived.
    const offsetNow = async () => Number((await tus.head(url)).headers.get('upload-offset'))
    await eventually(async () => (await offsetNow()) > 0, undefined, 'the upload to be released')
    const offset = await offsetNow()
    expect(offset).toBe(sent)
    const rest = await tus.patch(url, offset, png.slice(offset))
    expect(rest.status).toBe(200)
    const answer = await rest.json()
    expect(answer.size).toBe(png.length)
    expect(new Uint8Array(await (await fetch(answer.url)).arrayBuffer())).toEqual(png)
  })

  test('every upload field works through Upload-Metadata: private shorthand, album, expires', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const res = await tus.upload(await makeImage('png', 10, 10), {
      filename: 'meta.png',
      private: 'yes',
      folder: 'Tus album',
      expires: 'PT1H',
    })
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body).toMatchObject({ visibility: 'private', filename: 'meta.png' })
    expect(Date.parse(body.expiresAt) - Date.now()).toBeGreaterThan(3500_000)
    const albums = (await t.json('/api/albums', { headers: user.bearer })).body.albums
    expect(albums.map((a: { title: string; imageCount: number }) => [a.title, a.imageCount])).toEqual([
      ['Tus album', 1],
    ])
    expect((await tus.create(10, { expires: 'forever' })).status).toBe(400)
  })

  test('protocol errors: 412 without Tus-Resumable, 415 for another content type, 400 for bad headers, 413 past the length', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const noVersion = await t.fetch('/api/v1/tus', {
      method: 'POST',
      headers: { ...user.keyHeader, 'upload-length': '10' },
    })
    expect(noVersion.status).toBe(412)
    expect(noVersion.headers.get('tus-version')).toBe('1.0.0')
    expect(typeof (await noVersion.json()).error).toBe('string')
    expect((await tus.create('abc')).status).toBe(400)
    expect((await tus.create(0)).status).toBe(400)
    expect((await t.fetch('/api/v1/tus', { method: 'POST', headers: { ...TUS, ...user.keyHeader } })).status).toBe(400)
    expect(
      (
        await t.fetch('/api/v1/tus', {
          method: 'POST',
          headers: { ...TUS, ...user.keyHeader, 'upload-defer-length': '1' },
        })
      ).status,
    ).toBe(400)
    expect((await tus.create(10, {}, { 'upload-metadata': 'filename ***' })).status).toBe(400)
    expect((await tus.create(10, {}, { 'upload-metadata': `filename ${b64('a')},filename ${b64('b')}` })).status).toBe(
      400,
    )
    // Upload fields are checked at creation, as the pipeline would check them.
    const badVisibility = await tus.create(10, { visibility: 'secret' })
    expect(badVisibility.status).toBe(400)
    expect((await badVisibility.json()).error).toContain('visibility')

    const url = (await tus.create(10)).headers.get('location')!
    const wrongType = await fetch(url, {
      method: 'PATCH',
      headers: { ...TUS, ...user.keyHeader, 'content-type': 'application/octet-stream', 'upload-offset': '0' },
      body: 'x',
    })
    expect(wrongType.status).toBe(415)
    const noOffset = await fetch(url, { method: 'PATCH', headers: { ...TUS, ...OCTETS, ...user.keyHeader }, body: 'x' })
    expect(noOffset.status).toBe(400)
    const tooMuch = await tus.patch(url, 0, new Uint8Array(11))
    expect(tooMuch.status).toBe(413)
    expect((await tus.head(url)).headers.get('upload-offset')).toBe('0')
  })

  test('a finished upload that is not an image: the last PATCH is a 400, kept for GET; nothing stored', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const bytes = new TextEncoder().encode('definitely not an image')
    const created = await tus.create(bytes.length, { filename: 'x.png' })
    const url = created.headers.get('location')!
    const last = await tus.patch(url, 0, bytes)
    expect(last.status).toBe(400)
    expect(typeof (await last.json()).error).toBe('string')
    expect((await tus.result(url)).status).toBe(400)
    expect((await t.json('/api/v1/me', { headers: user.keyHeader })).body.totalImages).toBe(0)
    expect(tusFiles(t)).not.toContain(url.split('/').at(-1))
  })

  test('termination: 204, then the upload and its data are gone', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const url = (await tus.create(100)).headers.get('location')!
    await tus.patch(url, 0, new Uint8Array(40))
    const id = url.split('/').at(-1)!
    expect(tusFiles(t)).toContain(id)
    const removed = await tus.remove(url)
    expect(removed.status).toBe(204)
    expect(removed.headers.get('tus-resumable')).toBe('1.0.0')
    expect((await tus.head(url)).status).toBe(404)
    expect((await tus.patch(url, 40, new Uint8Array(1))).status).toBe(404)
    expect(tusFiles(t)).not.toContain(id)
  })

  test("uploads are their creator's: another key, a JWT or nobody gets 404, and /api/tus cannot reach /api/v1/tus uploads", async () => {
    const owner = await userWithKey(t)
    const other = await userWithKey(t)
    const url = (await tusClient(t, '/api/v1/tus', owner.keyHeader).create(10)).headers.get('location')!
    const tus = tusClient(t, '/api/v1/tus')
    expect((await tus.head(url, other.keyHeader)).status).toBe(404)
    expect((await tus.patch(url, 0, new Uint8Array(10), other.keyHeader)).status).toBe(404)
    expect((await tus.remove(url, other.keyHeader)).status).toBe(404)
    expect((await tus.result(url, other.keyHeader)).status).toBe(404)
    expect((await tus.head(url, {})).status).toBe(401)
    const id = url.split('/').at(-1)
    expect((await tus.head(`${t.url}/api/tus/${id}`, owner.bearer)).status).toBe(404)
    expect((await tus.head(`${t.url}/api/tus/${id}`, {})).status).toBe(404)
    // Web uploads: a JWT user's upload is not an anonymous caller's, nor another user's.
    const alice = await registerUser(t)
    const bob = await registerUser(t)
    const web = (await tusClient(t, '/api/tus', alice.bearer).create(10)).headers.get('location')!
    expect((await tus.head(web, alice.bearer)).status).toBe(200)
    expect((await tus.head(web, bob.bearer)).status).toBe(404)
    expect((await tus.head(web, {})).status).toBe(404)
    expect((await tus.head(web, { authorization: 'Bearer nonsense' })).status).toBe(401)
    expect((await tus.head(`${t.url}/api/tus/not-an-id`, {})).status).toBe(404)
  })

  test('at most 10 unfinished uploads per account', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    for (let i = 0; i < 10; i++) expect((await tus.create(100)).status).toBe(201)
    const refused = await tus.create(100)
    expect(refused.status).toBe(400)
    expect((await refused.json()).error).toContain('unfinished')
  })

  test('expiry: the sweep removes uploads 24 hours after their creation, with their data', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const url = (await tus.create(100)).headers.get('location')!
    await tus.patch(url, 0, new Uint8Array(50))
    const id = url.split('/').at(-1)!
    const sweep = t.server.services.tus.sweep
    await sweep(Date.now() + 23 * 3600_000)
    expect((await tus.head(url)).status).toBe(200)
    expect(await sweep(Date.now() + 24 * 3600_000 + 1000)).toBeGreaterThanOrEqual(1)
    expect((await tus.head(url)).status).toBe(404)
    expect(existsSync(join(t.dataDir, 'tus', id))).toBe(false)
  })
})

describe('expired before the sweep', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer()
  })
  afterAll(() => t.stop())

  test('an expired upload answers 410 until it is swept', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const url = (await tus.create(100)).headers.get('location')!
    expect((await tus.patch(url, 0, new Uint8Array(10))).status).toBe(204)
    // Its expiry moved into the past, as if its time had run out (no short TTL to race).
    const id = new URL(url).pathname.split('/').pop()!
    await t.server.db
      .update(tusUploads)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(tusUploads.id, id))
    expect((await tus.head(url)).status).toBe(410)
    expect((await tus.patch(url, 10, new Uint8Array(10))).status).toBe(410)
    await t.server.services.tus.sweep()
    expect((await tus.head(url)).status).toBe(404)
  })
})

describe('limits apply to resumable uploads', () => {
  let t: TestServer
  const MAX_FILE = 20_000
  const QUOTA = 40_000
  beforeAll(async () => {
    t = await startTestServer({
      MAX_FILE_SIZE: String(MAX_FILE),
      UNVERIFIED_STORAGE_LIMIT: String(QUOTA),
      UPLOADS_PER_HOUR: '3',
      ANON_MAX_FILE_SIZE: '10000',
      ANON_UPLOADS_PER_WINDOW: '1',
    })
  })
  afterAll(() => t.stop())

  test('Upload-Length over the per-file limit: 413 at creation (API key, JWT and anonymous limits)', async () => {
    const user = await userWithKey(t)
    const api = await tusClient(t, '/api/v1/tus', user.keyHeader).create(MAX_FILE + 1)
    expect(api.status).toBe(413)
    expect(typeof (await api.json()).error).toBe('string')
    expect((await tusClient(t, '/api/v1/tus', user.keyHeader).create(MAX_FILE)).status).toBe(201)
    expect((await tusClient(t, '/api/tus', user.bearer).create(MAX_FILE + 1)).status).toBe(413)
    expect((await tusClient(t, '/api/tus').create(10_001)).status).toBe(413)
    expect((await tusClient(t, '/api/tus').create(10_000)).status).toBe(201)
    // An admin has no per-file limit.
    const admin = await userWithKey(t)
    await t.server.services.admin.updateUser(admin.user.id, { role: 'admin' })
    expect((await tusClient(t, '/api/v1/tus', admin.keyHeader).create(MAX_FILE * 10)).status).toBe(201)
  })

  test('the storage quota: 413 at creation when the file cannot fit, and at the end when it no longer does', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const file = await makeNoisePng(75)
    expect(file.length).toBeLessThan(MAX_FILE)
    expect(file.length * 2).toBeLessThan(QUOTA)
    expect(file.length * 3).toBeGreaterThan(QUOTA)
    // Uploads in flight reserve nothing: three can start although only two fit.
    const urls: string[] = []
    for (let i = 0; i < 3; i++) urls.push((await tus.create(file.length)).headers.get('location')!)
    const statuses: number[] = []
    for (const url of urls) statuses.push((await tus.patch(url, 0, file)).status)
    expect(statuses).toEqual([200, 200, 413])
    expect((await tus.result(urls[2])).status).toBe(413)
    const usage = (await t.json('/api/v1/me', { headers: user.keyHeader })).body
    expect(usage.totalImages).toBe(2)
    expect(usage.storage.used).toBe(2 * file.length)
    // Now the quota is checked at creation.
    const full = await tus.create(file.length)
    expect(full.status).toBe(413)
  })

  test('the rate window: a finished upload counts one; 429 at creation once it is used up', async () => {
    const user = await userWithKey(t)
    const tus = tusClient(t, '/api/v1/tus', user.keyHeader)
    const small = await makeImage('png', 8, 8)
    for (let i = 0; i < 3; i++) expect((await tus.upload(small)).status).toBe(200)
    const refused = await tus.create(small.length)
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(refused.headers.get('ratelimit-remaining')).toBe('0')
    // The multipart endpoint shares the window.
    const form = new FormData()
    form.append('file', new Blob([small as Uint8Array<ArrayBuffer>]), 'a.png')
    expect((await t.fetch('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: form })).status).toBe(429)
  })

  test('anonymous web uploads: their own window, per IP; the answer carries a delete token', async () => {
    // The first test already started one anonymous upload; it has not finished, so the window is untouched.
    const tus = tusClient(t, '/api/tus')
    const small = await makeImage('png', 8, 8)
    const done = await tus.upload(small, { filename: 'anon.png' })
    expect(done.status).toBe(200)
    const body = await done.json()
    expect(typeof body.deleteToken).toBe('string')
    expect((await tus.create(small.length)).status).toBe(429)
    // Albums need an account.
    const withAlbum = await tusClient(t, '/api/tus', (await registerUser(t)).bearer).create(10, { album: 'x' })
    expect(withAlbum.status).toBe(201)
    expect((await tus.create(10, { album: 'x' })).status).toBe(400)
    // The delete token works.
    const removed = await t.fetch(`/api/v1/image/${body.id}`, {
      method: 'DELETE',
      headers: { 'x-delete-token': body.deleteToken },
    })
    expect(removed.status).toBe(200)
  })
})

describe('web resumable uploads are scanned like POST /api/upload', () => {
  let t: TestServer
  const fake = fakeClassifier('porn')
  beforeAll(async () => {
    t = await startTestServer({}, { classifier: fake.classifier })
  })
  afterAll(() => t.stop())

  test('/api/tus scans (flagged here); /api/v1/tus does not (SCAN_API_UPLOADS off)', async () => {
    const png = await makeImage('png', 64, 64)
    const before = fake.state.calls
    const web = await tusClient(t, '/api/tus').upload(png)
    expect(web.status).toBe(200)
    expect((await web.json()).nsfw).toBe(true)
    expect(fake.state.calls).toBe(before + 1)
    const user = await userWithKey(t)
    const api = await tusClient(t, '/api/v1/tus', user.keyHeader).upload(png, {
      visibility: 'private',
      album: 'Holiday',
    })
    expect(api.status).toBe(200)
    expect(await api.json()).toMatchObject({ nsfw: false, visibility: 'private' })
    expect(fake.state.calls).toBe(before + 1)
    const albums = (await t.json('/api/albums', { headers: user.bearer })).body.albums
    expect(albums.map((a: { title: string; imageCount: number }) => [a.title, a.imageCount])).toEqual([['Holiday', 1]])
  })
})
