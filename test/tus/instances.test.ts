/**
 * tus uploads across instances: the partial bytes live in TUS_DIR (one shared directory) and "one request at a time per
 * upload" is a claim in the database (tus_uploads.claimed_until), so a chunk may reach any instance, two at once on
 * two instances get one 204 and one 423, and the claim of a request that stopped (a crashed instance) runs out.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { engine } from '../../src/db/engine'
import { tusUploads } from '../../src/db/schema'
import { makeNoisePng } from '../fixtures'
import { startInstancePair, startTestServer, type TestClock, type TestServer, testClock, userWithKey } from '../helpers'
import { spawnS3Server } from '../s3-server'

const TUS = { 'tus-resumable': '1.0.0' }
const OCTETS = { 'content-type': 'application/offset+octet-stream' }

/** A request body the test feeds by hand: it stays open (the request waits for more) until `close`. */
function heldBody(first: Uint8Array) {
  let stream!: ReadableStreamDefaultController<Uint8Array>
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      stream = controller
      controller.enqueue(first)
    },
  })
  return {
    body,
    send: (bytes: Uint8Array) => stream.enqueue(bytes),
    /** Ends the body (a refused request's body was already cancelled by its client: nothing to end then). */
    close() {
      try {
        stream.close()
      } catch {}
    },
  }
}

const patch = (url: string, offset: number, body: BodyInit, auth: Record<string, string>) =>
  fetch(url, {
    method: 'PATCH',
    headers: { ...TUS, ...OCTETS, ...auth, 'upload-offset': String(offset) },
    body,
    duplex: 'half',
  } as RequestInit)

const create = async (t: TestServer, length: number, auth: Record<string, string>) => {
  const res = await t.fetch('/api/v1/tus', {
    method: 'POST',
    headers: { ...TUS, ...auth, 'upload-length': String(length), 'upload-metadata': `filename ${btoa('noise.png')}` },
  })
  expect(res.status).toBe(201)
  return res.headers.get('location')!
}

const idOf = (url: string) => new URL(url).pathname.split('/').pop()!

/** The upload's row as the database holds it now. */
const rowOf = async (t: TestServer, url: string) =>
  (
    await t.server.db
      .select()
      .from(tusUploads)
      .where(eq(tusUploads.id, idOf(url)))
  )[0]

/** Waits (a few ms at a time) until the upload is claimed: the request holding it has read its headers. */
async function claimed(t: TestServer, url: string) {
  for (let tries = 0; (await rowOf(t, url))?.claimedUntil == null; tries++) {
    if (tries > 5000) throw new Error('the upload was never claimed')
    await Bun.sleep(2)
  }
}

/** The same upload path on another instance. */
const on = (t: TestServer, url: string) => `${t.url}${new URL(url).pathname}`

describe.skipIf(engine !== 'pg')('tus on two instances with one database, one bucket and one TUS_DIR', () => {
  let s3: Awaited<ReturnType<typeof spawnS3Server>>
  let instances: Awaited<ReturnType<typeof startInstancePair>>
  let tusDir: string
  let a: TestServer
  let b: TestServer

  beforeAll(async () => {
    s3 = await spawnS3Server()
    tusDir = mkdtempSync(join(tmpdir(), 'imghost-tus-shared-'))
    const env = {
      ...s3.env,
      STORAGE: 's3',
      S3_PREFIX: 'tus-instances/',
      TUS_DIR: tusDir,
      GLOBAL_RATE_LIMIT: '100000',
    }
    instances = await startInstancePair(env)
    ;[a, b] = instances.pair
  })

  afterAll(async () => {
    await instances?.stop()
    await s3?.kill()
    rmSync(s3.dir, { recursive: true, force: true })
    rmSync(tusDir, { recursive: true, force: true })
  })

  test('created on one, a chunk through it, the rest through the other: the image is stored, read through both', async () => {
    const alice = await userWithKey(a)
    const png = await makeNoisePng(120)
    const half = Math.floor(png.length / 2)
    const url = await create(a, png.length, alice.keyHeader)
    expect((await patch(url, 0, png.slice(0, half), alice.keyHeader)).status).toBe(204)
    // The other instance sees the offset and the bytes (the same row, the same directory).
    const head = await fetch(on(b, url), { method: 'HEAD', headers: { ...TUS, ...alice.keyHeader } })
    expect(head.status).toBe(200)
    expect(head.headers.get('upload-offset')).toBe(String(half))
    const last = await patch(on(b, url), half, png.slice(half), alice.keyHeader)
    expect(last.status).toBe(200)
    const answer = (await last.json()) as { id: string; size: number; url: string }
    expect(answer.size).toBe(png.length)
    for (const t of [a, b]) {
      const meta = await t.json(`/api/v1/image/${answer.id}`)
      expect(meta.status).toBe(200)
      const file = await t.fetch(new URL(answer.url).pathname)
      expect(file.status).toBe(200)
      expect(new Uint8Array(await file.arrayBuffer())).toEqual(png)
    }
    // The kept answer too, through the instance that did not finish it.
    expect((await fetch(url, { headers: alice.keyHeader })).status).toBe(200)
  })

  test('two PATCHes at once to one upload through the two instances: one is accepted, the other is 423', async () => {
    const bob = await userWithKey(a)
    const png = await makeNoisePng(100)
    const url = await create(a, png.length, bob.keyHeader)
    // The first request holds the upload: its body is still coming when the second arrives.
    const held = heldBody(png.slice(0, 1000))
    const first = patch(url, 0, held.body, bob.keyHeader)
    await claimed(a, url)
    const second = await patch(on(b, url), 0, png.slice(0, 2000), bob.keyHeader)
    expect(second.status).toBe(423)
    held.send(png.slice(1000, 3000))
    held.close()
    const accepted = await first
    expect(accepted.status).toBe(204)
    expect(accepted.headers.get('upload-offset')).toBe('3000')
    // Let go: the next chunk is accepted through the other instance, and the upload finishes whole.
    expect((await rowOf(b, url))?.claimedUntil).toBeNull()
    const rest = await patch(on(b, url), 3000, png.slice(3000), bob.keyHeader)
    expect(rest.status).toBe(200)
    const answer = (await rest.json()) as { url: string }
    expect(new Uint8Array(await (await a.fetch(new URL(answer.url).pathname)).arrayBuffer())).toEqual(png)
  })

  test('two PATCHes sent at the same moment, one through each instance: exactly one 204, one 423', async () => {
    const carol = await userWithKey(a)
    const png = await makeNoisePng(100)
    const url = await create(a, png.length, carol.keyHeader)
    // Both bodies stay open until both requests are in: the one that claimed waits for its body, the other is refused.
    const bodies = [heldBody(png.slice(0, 500)), heldBody(png.slice(0, 500))]
    const requests = [
      patch(url, 0, bodies[0]!.body, carol.keyHeader),
      patch(on(b, url), 0, bodies[1]!.body, carol.keyHeader),
    ]
    const refused = await Promise.race(requests.map(async (r, i) => ({ i, res: await r })))
    expect(refused.res.status).toBe(423)
    const winner = 1 - refused.i
    bodies[winner]!.close()
    const accepted = await requests[winner]!
    expect(accepted.status).toBe(204)
    expect(accepted.headers.get('upload-offset')).toBe('500')
    bodies[refused.i]!.close()
  })
})

describe('a claim left by a request that stopped runs out', () => {
  let t: TestServer
  let clock: TestClock
  let key: Record<string, string>

  beforeAll(async () => {
    clock = testClock(Date.now())
    t = await startTestServer({}, { tusOptions: { now: clock.now } })
    key = (await userWithKey(t)).keyHeader
  })
  afterAll(() => t.stop())

  test("a crashed instance's claim: 423, and the sweep skips the upload, until the claim's time is past", async () => {
    const start = clock.now()
    const png = await makeNoisePng(60)
    const url = await create(t, png.length, key)
    // The claim a request left behind when its instance died: nobody renews or clears it.
    await t.server.db
      .update(tusUploads)
      .set({ claimedUntil: new Date(start + 60_000) })
      .where(eq(tusUploads.id, idOf(url)))
    expect((await patch(url, 0, png.slice(0, 100), key)).status).toBe(423)
    // Expired by then, but held: the sweep leaves it.
    const past = start + 25 * 3600_000
    await t.server.services.tus.sweep(past)
    expect(await rowOf(t, url)).toBeDefined()
    clock.set(start + 60_001)
    expect((await patch(url, 0, png.slice(0, 100), key)).status).toBe(204)
    expect((await rowOf(t, url))?.claimedUntil).toBeNull()
    // Held again, by a claim that has run out: no longer in the sweep's way.
    await t.server.db
      .update(tusUploads)
      .set({ claimedUntil: new Date(start + 60_000) })
      .where(eq(tusUploads.id, idOf(url)))
    expect(await t.server.services.tus.sweep(past)).toBeGreaterThanOrEqual(1)
    expect(await rowOf(t, url)).toBeUndefined()
  })

  test('a request that stalls past its claim is overtaken: it writes nothing more and answers 423', async () => {
    const start = clock.now()
    const png = await makeNoisePng(60)
    const url = await create(t, png.length, key)
    // A request that stalls after 10 bytes of zeros (bytes that must not end up in the file).
    const stalled = heldBody(new Uint8Array(10))
    const first = patch(url, 0, stalled.body, key)
    await claimed(t, url)
    expect((await patch(url, 0, png.slice(0, 100), key)).status).toBe(423)
    // Its claim's time passes with no renewal (as when its instance froze): another request takes the upload over.
    clock.set(start + 60_001)
    const next = await patch(url, 0, png.slice(0, 100), key)
    expect(next.status).toBe(204)
    expect(next.headers.get('upload-offset')).toBe('100')
    // The stalled one comes back: it notices the loss before writing, leaves the offset, and is told 423.
    stalled.send(new Uint8Array(200))
    stalled.close()
    expect((await first).status).toBe(423)
    expect((await rowOf(t, url))?.offset).toBe(100)
    const rest = await patch(url, 100, png.slice(100), key)
    expect(rest.status).toBe(200)
    const answer = (await rest.json()) as { url: string }
    expect(new Uint8Array(await (await t.fetch(new URL(answer.url).pathname)).arrayBuffer())).toEqual(png)
  })
})
