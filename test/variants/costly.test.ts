/**
 * Issue 33: accepted work is paid once. A size predicted past the media budget is refused without a job, a size whose
 * job failed is remembered in the database (a restart, or another instance, answers it without a job), the failure
 * costs its sender, pages never link what /cdn refuses, and one account's heavy jobs never keep another's waiting.
 * Jobs are counted by a spy on the real media pool (test/variants/support.ts), never timed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { parse } from 'node-html-parser'
import sharp from 'sharp'
import { images, variantFailures } from '../../src/db/schema'
import type { Media } from '../../src/media'
import { originalKey } from '../../src/storage'
import { type Bytes, makeFrameBombGif, makeImage, uploadForm } from '../fixtures'
import {
  databaseEnv,
  dropDatabase,
  eventually,
  jsonBody,
  startTestServer,
  storageEnv,
  type TestServer,
  userWithKey,
} from '../helpers'
import { countingMedia, testMediaPool, upload } from './support'

const counting = countingMedia()
let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
/** Issue 33's GIF: 1000 frames of 1000x1000, uploaded anonymously. */
let bomb: { id: string; thumbnail: string; viewer: string }

beforeAll(async () => {
  t = await startTestServer({ VARIANTS_MADE_PER_SECOND: '1000' }, { media: counting.media })
  owner = await userWithKey(t)
  const res = await t.json('/api/upload', {
    method: 'POST',
    body: uploadForm([{ bytes: makeFrameBombGif(1000, 1000), name: 'bomb.gif' }]),
  })
  expect(res.status).toBe(201)
  bomb = res.body
}, 120_000)
afterAll(() => t.stop())

describe("issue 33's accepted bomb", () => {
  test('its WebP sizes are refused at once with the reason, every time, without a job; no 500 anywhere', async () => {
    const jobs = counting.counter.variantJobs
    for (const path of [`/cdn/large/${bomb.id}.webp`, `/cdn/large/${bomb.id}.webp`, `/cdn/small/${bomb.id}.webp`]) {
      const res = await t.json(path)
      expect(res.status).toBe(422)
      expect(res.body.error).toContain('1,000 frames of 1000x1000')
      expect(res.body.error).toContain('the original and its thumbnail are served as they are')
      expect(res.headers.get('cache-control')).toBe('no-store')
    }
    expect(counting.counter.variantJobs).toBe(jobs)
  })

  test('its original and thumbnail are served; its other formats are its first frame, made as usual', async () => {
    expect((await t.fetch(new URL(bomb.thumbnail).pathname)).status).toBe(200)
    expect((await t.fetch(`/cdn/${bomb.id}.gif`)).status).toBe(200)
    const jobs = counting.counter.variantJobs
    const jpg = await t.fetch(`/cdn/large/${bomb.id}.jpg`)
    expect(jpg.status).toBe(200)
    const meta = await sharp(new Uint8Array(await jpg.arrayBuffer())).metadata()
    expect([meta.format, meta.width, meta.height, meta.pages ?? 1]).toEqual(['jpeg', 1000, 1000, 1])
    expect(counting.counter.variantJobs).toBe(jobs + 1)
  })

  test('the gallery tile links only the sizes /cdn serves: the thumbnail as its WebP', async () => {
    const page = parse(await (await t.fetch('/gallery')).text())
    const tile = page.querySelectorAll('.tile').find((li) => li.innerHTML.includes(bomb.viewer))!
    const srcset = tile.querySelector('source[type="image/webp"]')!.getAttribute('srcset')!
    expect(srcset).toBe(`${bomb.thumbnail} 500w`)
    for (const url of [
      ...srcset.split(', ').map((s) => s.split(' ')[0]!),
      tile.querySelector('img')!.getAttribute('src')!,
    ])
      expect((await t.fetch(new URL(url).pathname)).status).toBe(200)
  })

  test('a signed WebP size of it is refused when asked for, with the same reason', async () => {
    const mine = await upload(t, owner.keyHeader, makeFrameBombGif(1000, 1000), 'mine.gif')
    const sign = (format: string) =>
      t.json(`/api/v1/image/${mine.id}/variants`, {
        method: 'POST',
        ...jsonBody({ width: 400, format }, owner.keyHeader),
      })
    const refused = await sign('webp')
    expect(refused.status).toBe(422)
    expect(refused.body.error).toContain('1,000 frames of 1000x1000')
    expect((await sign('png')).status).toBe(200)
  }, 60_000)

  test('a row stored before its frames were recorded: the worker refuses it from the header once, then it is remembered', async () => {
    // As rows from before the 0013 migration are: one frame, as far as the row knows.
    await t.server.db.update(images).set({ frames: 1 }).where(eq(images.id, bomb.id))
    // On PostgreSQL the cached row is dropped when the change notice arrives.
    await eventually(async () => (await t.server.services.images.liveCache.get(bomb.id))?.frames === 1)
    const jobs = counting.counter.variantJobs
    const first = await t.json(`/cdn/large/${bomb.id}.webp`)
    expect(first.status).toBe(422)
    expect(first.body.error).toContain('could not be made from the original')
    expect(first.body.error).toContain('1,000 frames of 1000x1000')
    expect(counting.counter.variantJobs).toBe(jobs + 1)
    // The second request is answered at once: no job.
    const second = await t.json(`/cdn/large/${bomb.id}.webp`)
    expect(second.status).toBe(422)
    expect(second.body.error).toBe(first.body.error)
    expect(counting.counter.variantJobs).toBe(jobs + 1)
  })
})

/** A PNG whose header is whole and whose pixels are cut off: it decodes no more. */
async function truncatedPng(): Promise<string> {
  const png = await makeImage('png', 600, 400, 9)
  const path = join(mkdtempSync(join(tmpdir(), 'imghost-cut-')), 'cut.png')
  await Bun.write(path, png.slice(0, Math.floor(png.length / 2)))
  return path
}

describe('a size whose job failed', () => {
  test('is remembered in the database: after a restart it is answered without a job; the failure costs its sender', async () => {
    // One data directory, database and bucket prefix for both servers (they run one after the other).
    const shared = { ...storageEnv(), ...(await databaseEnv()) }
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-remember-'))
    const env = {
      ...shared,
      DATA_DIR: dataDir,
      REFUSED_UPLOADS_PER_WINDOW: '1',
      VARIANTS_MADE_PER_SECOND: '1000',
      TRUST_PROXY: 'true',
    }
    const from = (ip: string) => ({ 'x-forwarded-for': ip })
    const first = countingMedia()
    const a = await startTestServer(env, { media: first.media })
    let aRunning = true
    let b: TestServer | undefined
    try {
      const user = await userWithKey(a)
      const image = await upload(
        a,
        { ...user.keyHeader, ...from('203.0.113.7') },
        await makeImage('png', 600, 400, 9),
        'fine.png',
      )
      // The stored original is damaged afterwards (a disk's fault, an operator's mistake): it no longer decodes.
      await a.server.deps.storage.put(originalKey(image.id, 'png'), await truncatedPng(), { replace: true })
      // Asked for by a client that is not the image's sender.
      const asker = from('192.0.2.50')
      const failed = await a.json(`/cdn/small/${image.id}.png`, { headers: asker })
      expect(failed.status).toBe(422)
      expect(failed.body.error).toBe('This size could not be made from the original: Image could not be decoded')
      expect(first.counter.variantJobs).toBe(1)
      expect((await a.json(`/cdn/small/${image.id}.png`, { headers: asker })).body).toEqual(failed.body)
      expect(first.counter.variantJobs).toBe(1)
      // Charged to the image's sender like a refused upload, its account and the address it came from: one in a window
      // of 1, so their next upload is refused before it is read.
      const next = (headers: Record<string, string>, path: string) =>
        a.json(path, { method: 'POST', headers, body: uploadForm([{ bytes: tinyPng }]) })
      const tinyPng = await makeImage('png', 20, 20)
      const byAccount = await next({ ...user.keyHeader, ...from('198.51.100.8') }, '/api/v1/upload')
      expect(byAccount.status).toBe(429)
      expect(byAccount.body.error).toContain('Too many refused uploads from this account')
      const byAddress = await next(from('203.0.113.7'), '/api/upload')
      expect(byAddress.status).toBe(429)
      expect(byAddress.body.error).toContain('Too many refused uploads from this address')
      // The client that asked for the size is not charged: its own uploads go on.
      expect((await next(asker, '/api/upload')).status).toBe(201)
      // Signing it again is refused with the reason.
      const signed = await a.json(`/api/v1/image/${image.id}/variants`, {
        method: 'POST',
        ...jsonBody({ width: 320, height: 320, format: 'png' }, user.keyHeader),
      })
      expect(signed.status).toBe(422)
      await a.server.stop()
      aRunning = false

      const second = countingMedia()
      b = await startTestServer(env, { media: second.media })
      const again = await b.json(`/cdn/small/${image.id}.png`)
      expect(again.status).toBe(422)
      expect(again.body).toEqual(failed.body)
      expect(second.counter.variantJobs).toBe(0)
      // Deleting the image takes what was remembered with it.
      expect((await b.fetch(`/api/v1/image/${image.id}`, { method: 'DELETE', headers: user.keyHeader })).status).toBe(
        200,
      )
      expect((await b.fetch(`/cdn/small/${image.id}.png`)).status).toBe(404)
      expect(await b.server.db.select().from(variantFailures).where(eq(variantFailures.imageId, image.id))).toEqual([])
    } finally {
      if (aRunning) await a.server.stop()
      await b?.stop()
      await dropDatabase(shared)
    }
  }, 120_000)
})

describe('the media pool takes turns between owners', () => {
  let fair: TestServer
  const started: string[] = []
  let ingests = 0
  beforeAll(async () => {
    const pool = testMediaPool({ workers: 1, timeoutMs: 60_000, onStart: (job) => started.push(job.owner) })
    const media: Media = {
      ...pool,
      ingest(path, opts) {
        ingests++
        return pool.ingest(path, opts)
      },
    }
    fair = await startTestServer({}, { media })
  })
  afterAll(() => fair.stop())

  test("another account's small upload starts right after the job running, ahead of one account's heavy ones", async () => {
    const heavy = await userWithKey(fair)
    const light = await userWithKey(fair)
    const send = (account: typeof heavy, bytes: Bytes, name: string) =>
      fair.json('/api/v1/upload', { method: 'POST', headers: account.keyHeader, body: uploadForm([{ bytes, name }]) })
    // Three heavy uploads at once (seconds of decoding each, one worker): the first runs, two wait.
    const heavyOnes = [1, 2, 3].map((i) => send(heavy, makeFrameBombGif(1000, 400), `heavy-${i}.gif`))
    await eventually(() => ingests === 3 && started.length === 1, 30_000, 'three heavy jobs queued, one started')
    const small = await send(light, await makeImage('png', 64, 48), 'small.png')
    expect(small.status).toBe(201)
    const results = await Promise.all(heavyOnes)
    for (const res of results) expect(res.status).toBe(201)
    const heavyOwner = `user:${heavy.user.id}`
    expect(started).toEqual([heavyOwner, `user:${light.user.id}`, heavyOwner, heavyOwner])
  }, 120_000)
})
