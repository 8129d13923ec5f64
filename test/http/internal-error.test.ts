/**
 * The real service's 500 path (errors.test.ts and fast-route.test.ts show it on stand-in apps): a dependency of the
 * app fails with a plain Error that nothing maps, on a route the app answers (POST /api/v1/upload, whose media job
 * throws) and on one Bun answers ahead of it (/cdn/:file, whose stored file throws when read). Each answer is a 500
 * `{ "error": "Internal server error" }` that names nothing internal, with one log line naming the error for the
 * operator and the request counted under its route with status 500.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { count } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { images } from '../../src/db/schema'
import { localMedia, type Media } from '../../src/media'
import type { Storage } from '../../src/storage'
import { createLocalStorage } from '../../src/storage/local'
import { mediaOptionsOf } from '../../src/workers/media-pool'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, storedKeys, type TestServer, userWithKey } from '../helpers'

const METRICS_TOKEN = 'internal-error-metrics'
// What a careless answer would leak: the message, a path, a source file, a stack frame.
const MEDIA_FAILURE = 'media job blew up reading /srv/imghost/secret/upload.ts:42'
const READ_FAILURE = 'stored file unreadable at /srv/imghost/secret/files.ts:7'

/** Switched on by a test, off again after it: each fault throws only while its switch is on. */
const faults = { media: false, read: false }

// The media jobs in this process (no worker pool to start), the ingest failing on demand.
const realMedia = localMedia(mediaOptionsOf(loadConfig({})))
const media: Media = {
  ...realMedia,
  async ingest(path, opts) {
    if (faults.media) throw new Error(MEDIA_FAILURE)
    return realMedia.ingest(path, opts)
  },
}

// Files on local disk whose stored file, once handed out, throws when its bytes are read (the /cdn hot-file loader
// reads them on the request after the first).
const storageRoot = mkdtempSync(join(tmpdir(), 'imghost-internal-error-'))
const realStorage = createLocalStorage(storageRoot)
const storage: Storage = {
  ...realStorage,
  file(key) {
    const file = realStorage.file(key)
    const bytes = file.bytes.bind(file)
    return Object.assign(file, {
      bytes() {
        if (faults.read) throw new Error(READ_FAILURE)
        return bytes()
      },
    })
  },
}

let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ METRICS_TOKEN }, { media, storage })
})
afterAll(async () => {
  await t.stop()
  rmSync(storageRoot, { recursive: true, force: true })
})

/** One series of GET /metrics, e.g. `http_requests_total{route="/cdn/:file",method="GET",status="500"}`; 0 when absent. */
async function metric(series: string): Promise<number> {
  const text = await (await t.fetch('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

/**
 * Sends the request with `fault` on and console.error captured; checks the answer is the bare 500 and that exactly
 * one line was logged, naming the error (its message and where it was thrown) for the operator.
 */
async function expectInternalError(fault: keyof typeof faults, secret: string, request: () => Promise<Response>) {
  const logged = spyOn(console, 'error').mockImplementation(() => {})
  faults[fault] = true
  let res: Response
  let lines: unknown[][]
  try {
    res = await request()
  } finally {
    faults[fault] = false
    // Read before the restore, which forgets the calls.
    lines = [...logged.mock.calls]
    logged.mockRestore()
  }
  expect(res.status).toBe(500)
  expect(res.headers.get('content-type')).toContain('application/json')
  const text = await res.text()
  expect(JSON.parse(text)).toEqual({ error: 'Internal server error' })
  for (const leak of ['blew up', 'unreadable', '/srv/', 'secret', '.ts', 'Error']) expect(text).not.toContain(leak)
  expect(text).not.toMatch(/\bat\s/)

  expect(lines).toHaveLength(1)
  const line = JSON.parse(String(lines[0][0]))
  expect(line).toMatchObject({ level: 'error', msg: 'unhandled error' })
  expect(line.error).toContain(secret)
  expect(line.error).toContain('internal-error.test.ts')
}

describe('an unexpected failure inside the real service: 500, logged once, counted', () => {
  test('a route the app answers: an upload whose media job throws; nothing is stored or counted', async () => {
    const user = await userWithKey(t)
    const series = 'http_requests_total{route="/api/v1/upload",method="POST",status="500"}'
    expect(await metric(series)).toBe(0)
    const png = await makeImage('png', 40, 30)
    const upload = () =>
      t.fetch('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: uploadForm([{ bytes: png }]) })

    await expectInternalError('media', MEDIA_FAILURE, upload)
    expect(await metric(series)).toBe(1)
    // Like every failure, it changed nothing: no file, no row, no use of the window, no temp file left.
    expect(await storedKeys(t)).toEqual([])
    expect(await t.server.db.select({ n: count() }).from(images)).toEqual([{ n: 0 }])
    expect((await t.json('/api/v1/me', { headers: user.keyHeader })).body).toMatchObject({
      totalImages: 0,
      storage: { used: 0 },
      rateLimit: { used: 0 },
    })
    expect(readdirSync(join(t.dataDir, 'tmp'))).toEqual([])

    // The next request is served as usual.
    expect((await upload()).status).toBe(201)
  })

  test('a route answered ahead of the app (/cdn/:file): a stored file that throws when read', async () => {
    const user = await userWithKey(t)
    const image = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: user.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 30, 2) }]),
      })
    ).body
    const path = `/cdn/${image.id}.png`
    const series = 'http_requests_total{route="/cdn/:file",method="GET",status="500"}'
    // The first answer streams the file from disk without reading it here; the next one reads it into memory.
    expect((await t.fetch(path)).status).toBe(200)
    expect(await metric(series)).toBe(0)

    await expectInternalError('read', READ_FAILURE, () => t.fetch(path))
    expect(await metric(series)).toBe(1)
    // The image is still served.
    expect((await t.fetch(path)).status).toBe(200)
  })
})
