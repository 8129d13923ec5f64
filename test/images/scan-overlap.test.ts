import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { images } from '../../src/db/schema'
import type { Media } from '../../src/media'
import type { Classifier } from '../../src/moderation'
import { IMAGE_BYTES } from '../../src/moderation/protocol'
import { createMediaPool, mediaOptionsOf } from '../../src/workers/media-pool'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer } from '../helpers'

describe('a web upload is scanned while its media job still encodes the thumbnail', () => {
  // The real pool of worker processes, each ingest job watched from the server's side.
  const pool = createMediaPool({
    ...mediaOptionsOf(loadConfig({})),
    workers: 1,
    timeoutMs: 20_000,
    memoryBytes: 2 ** 30,
    maxQueue: 8,
  })
  let ingesting = 0
  const media: Media = {
    ...pool,
    async ingest(path, opts) {
      ingesting++
      try {
        return await pool.ingest(path, opts)
      } finally {
        ingesting--
      }
    },
  }
  /** For each scan: the input's length, its buffer's (the Worker gets the whole buffer), and whether the job was still running. */
  const scans: { length: number; bufferLength: number; jobRunning: boolean }[] = []
  const classifier: Classifier = {
    async classify(rgb) {
      scans.push({ length: rgb.length, bufferLength: rgb.buffer.byteLength, jobRunning: ingesting > 0 })
      return { Porn: 0.01, Hentai: 0.01, Sexy: 0.01, Neutral: 0.95, Drawing: 0.02 }
    },
    warm: async () => {},
    close: async () => {},
    queueDepth: 0,
  }
  let t: TestServer
  /** A server whose media jobs never hand over the classifier's input (a job that cannot give one). */
  let silent: TestServer
  beforeAll(async () => {
    t = await startTestServer({}, { media, classifier })
    silent = await startTestServer(
      {},
      { media: { ...media, ingest: (path, o) => media.ingest(path, { thumbPath: o.thumbPath }) }, classifier },
    )
  })
  afterAll(() => Promise.all([t.stop(), silent.stop()]))

  test('the classifier gets the input before the job answers, in a buffer of its own to move to its Worker', async () => {
    const res = await t.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('png', 1280, 720) }]),
    })
    expect(res.status).toBe(201)
    expect(scans).toEqual([{ length: IMAGE_BYTES, bufferLength: IMAGE_BYTES, jobRunning: true }])
    const [row] = await t.server.db.select().from(images).where(eq(images.id, res.body.id))
    expect(row).toMatchObject({ nsfw: false, scanStatus: 'done' })
  })

  test('a job that gives no input leaves the image pending, out of public feeds, never unscanned', async () => {
    const before = scans.length
    const res = await silent.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('png', 64, 48) }]),
    })
    expect(res.status).toBe(201)
    expect(scans).toHaveLength(before)
    const [row] = await silent.server.db.select().from(images).where(eq(images.id, res.body.id))
    expect(row).toMatchObject({ nsfw: false, scanStatus: 'pending' })
  })
})
