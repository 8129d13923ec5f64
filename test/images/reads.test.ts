/**
 * On SQLite the list reads (the gallery, search, profiles, owners' lists, albums: src/modules/images/reads.ts) run on
 * a Worker's read-only connection, so a slow one never holds the event loop: the server's own connection runs none of
 * their statements, and what they answer is what the rows say (a read right after a write sees it).
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { workerReads } from '../../src/modules/images/reads'
import { SWEEP_GRACE_MS } from '../../src/storage/sweep'
import { makeImage, uploadForm } from '../fixtures'
import { eventually, startTestServer, type TestServer, userWithKey } from '../helpers'

/** The SQL of every statement the server's thread prepares while `recording` is on (a Worker has its own classes). */
const statements: string[] = []
let recording = false
const prepare = Database.prototype.prepare
const query = Database.prototype.query

describe.skipIf(engine === 'pg')('list reads off the event loop (SQLite)', () => {
  let t: TestServer
  let owner: Awaited<ReturnType<typeof userWithKey>>

  beforeAll(async () => {
    for (const [method, original] of [
      ['prepare', prepare],
      ['query', query],
    ] as const)
      (Database.prototype as unknown as Record<string, unknown>)[method] = function (
        this: Database,
        sql: string,
        ...rest: unknown[]
      ) {
        if (recording) statements.push(sql)
        return (original as (this: Database, ...a: unknown[]) => unknown).call(this, sql, ...rest)
      }
    t = await startTestServer()
    owner = await userWithKey(t)
  })
  afterAll(async () => {
    Database.prototype.prepare = prepare
    Database.prototype.query = query
    await t?.stop()
  })

  test('the gallery, search, a profile, an owner list and albums answer from the Worker, up to date with writes', async () => {
    for (let i = 0; i < 3; i++) {
      const up = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 16, 16, i), name: `harbour ${i}.png` }], {
          album: 'harbour trip',
        }),
      })
      expect(up.status).toBe(201)
      const albumId = (await t.json('/api/albums', { headers: owner.bearer })).body.albums[0].id
      // Each read right after the write that changed what it shows.
      recording = true
      const answers = [
        await t.json('/api/gallery'),
        await t.json('/api/search?q=harbour'),
        await t.json(`/api/users/${owner.user.username}`),
        await t.json('/api/v1/images', { headers: owner.keyHeader }),
      ]
      const albums = await t.json('/api/albums', { headers: owner.bearer })
      const album = await t.json(`/api/albums/${albumId}`)
      const page = await t.fetch(`/a/${albumId}`)
      recording = false
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        expect(answer.body.total).toBe(i + 1)
        expect(answer.body.images[0].id).toBe(up.body.id)
      }
      expect(albums.body.albums[0]).toMatchObject({ id: albumId, imageCount: i + 1 })
      expect(album.body.images[0].id).toBe(up.body.id)
      expect(await page.text()).toContain(up.body.id)
    }
    // The thread that serves requests read no image and no count for them.
    expect(statements.filter((s) => /image_counts|image_search|from "images"|from "album_images"/i.test(s))).toEqual([])
  })

  // The stray file is planted on the local disk, backdated past the grace (an object's time cannot be set): the
  // lookups this is about are the same whatever the store.
  test.skipIf(process.env.STORAGE === 's3')(
    "the orphan sweep asks which stored files have a row on the Workers' connections",
    async () => {
      // A server sweeping every 200 ms: a stray file older than the grace goes, the upload's files stay.
      const sweeping = await startTestServer({}, { orphanSweep: { intervalMs: 200 } })
      try {
        const uploader = await userWithKey(sweeping)
        const up = await sweepingUpload(sweeping, uploader)
        const stray = join(sweeping.dataDir, 'files', 'originals', 'strayfil.png')
        mkdirSync(join(sweeping.dataDir, 'files', 'originals'), { recursive: true })
        writeFileSync(stray, 'not an image')
        const old = new Date(Date.now() - 2 * SWEEP_GRACE_MS)
        utimesSync(stray, old, old)
        statements.length = 0
        recording = true
        await eventually(() => !existsSync(stray), 10_000, 'the sweep removed the stray file')
        recording = false
        expect((await sweeping.fetch(`/cdn/${up.id}.png`)).status).toBe(200)
        expect(statements.filter((s) => /from "images"/i.test(s))).toEqual([])
      } finally {
        recording = false
        await sweeping.stop()
      }
    },
  )
})

async function sweepingUpload(server: TestServer, uploader: Awaited<ReturnType<typeof userWithKey>>) {
  const up = await server.json('/api/v1/upload', {
    method: 'POST',
    headers: uploader.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 16, 16, 7), name: 'kept.png' }]),
  })
  expect(up.status).toBe(201)
  return up.body as { id: string }
}

describe.skipIf(engine === 'pg')('the reading Workers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'imghost-reads-'))
  const path = join(dir, 'imghost.sqlite')
  openDatabase(path).$client.close()
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const galleryOf = (reads: ReturnType<typeof workerReads>) => () =>
    reads.feed({ kind: 'gallery' }, { page: 1, limit: 5, offset: 0 }, Date.now())

  test('start with the reads sent to them, and take reads side by side', async () => {
    const reads = workerReads(path, { size: 2, idleMs: 60_000 })
    const gallery = galleryOf(reads)
    try {
      expect(reads.running()).toBe(0)
      expect((await gallery()).total).toBe(0)
      expect(reads.running()).toBe(1)
      // Two at once: the second goes to the Worker with nothing waiting.
      await Promise.all([gallery(), gallery()])
      expect(reads.running()).toBe(2)
    } finally {
      await reads.close()
    }
  })

  test('end once idle; the next read starts one again', async () => {
    const reads = workerReads(path, { size: 2, idleMs: 200 })
    const gallery = galleryOf(reads)
    try {
      expect((await gallery()).total).toBe(0)
      await eventually(() => reads.running() === 0, 10_000, 'the idle Worker ended')
      expect((await gallery()).total).toBe(0)
      expect(reads.running()).toBe(1)
    } finally {
      await reads.close()
    }
  })
})
