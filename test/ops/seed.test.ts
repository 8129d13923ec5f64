/**
 * `cli seed`: the made-up library the scale bench measures (src/ops/seed.ts). Judged by the service itself and by
 * plain SQL on its database: the rows it claims, their shares, their files, their search documents and the image counts
 * (`cli check` recounts them), and the search triggers back in place for the uploads after it. Both engines
 * (`npm run test:pg`).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { tmpdir } from 'node:os'
import { sql } from 'drizzle-orm'
import { rawRows } from '../../src/db/client'
import { type Bytes, makeImage, uploadForm } from '../fixtures'
import { runCli, startTestServer, type TestServer, userWithKey } from '../helpers'

const ROWS = 400
/** Files are hard-linked on local storage only; in a bucket the rows have none (docs/operations.md: Operations CLI, seed). */
const local = process.env.STORAGE !== 's3'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let sourceId = ''
let sourceBytes: Bytes
let report: Record<string, number | string>

const cli = (...args: string[]) =>
  runCli(args, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir(), ...t.env })
const count = async (where: string) =>
  Number(
    (await rawRows<{ n: number | string }>(t.server.db, sql.raw(`SELECT count(*) AS n FROM images ${where}`)))[0].n,
  )

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  sourceBytes = await makeImage('jpeg', 96, 64, 7)
  const up = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes: sourceBytes, name: 'source.jpg', type: 'image/jpeg' }]),
  })
  expect(up.status).toBe(201)
  sourceId = up.body.id
  const seeded = await cli('seed', String(ROWS), '--from', sourceId)
  expect(seeded.err).toBe('')
  expect(seeded.code).toBe(0)
  report = JSON.parse(seeded.out)
})
afterAll(() => t?.stop())

describe('cli seed', () => {
  test('inserts the rows it reports, cloned from the upload, half of them the owner’s and a fifth private', async () => {
    expect(report).toMatchObject({ source: sourceId, rows: ROWS, linkedFiles: local ? 2 * ROWS : 0 })
    expect(await count('')).toBe(ROWS + 1)
    expect(await count(`WHERE user_id = ${owner.user.id} AND id <> '${sourceId}'`)).toBe(ROWS / 2)
    expect(await count(`WHERE visibility = 'private'`)).toBe(ROWS / 5)
    // Every row the source's size and dimensions, its own hashes (lookups by hash find one row each).
    const [source] = await rawRows<{ size: number | string; width: number; height: number }>(
      t.server.db,
      sql`SELECT size, width, height FROM images WHERE id = ${sourceId}`,
    )
    expect(
      await count(`WHERE size = ${Number(source.size)} AND width = ${source.width} AND height = ${source.height}`),
    ).toBe(ROWS + 1)
    const [distinct] = await rawRows<{ sha: number | string; phash: number | string }>(
      t.server.db,
      sql`SELECT count(DISTINCT sha256) AS sha, count(DISTINCT phash) AS phash FROM images`,
    )
    expect([Number(distinct.sha), Number(distinct.phash)]).toEqual([ROWS + 1, ROWS + 1])
  })

  test.skipIf(local)('in a bucket the seeded rows have no files: their /cdn links answer 404', async () => {
    const page = await t.json('/api/gallery?page=1&limit=40')
    const seeded = page.body.images.find((i: { id: string }) => i.id !== sourceId)
    expect((await t.fetch(`/cdn/${seeded.id}.jpg`)).status).toBe(404)
    expect((await t.fetch(`/cdn/${sourceId}.jpg`)).status).toBe(200)
  })

  test.skipIf(!local)(
    'every seeded row is served with the upload’s bytes, and cli check finds every file and true counts',
    async () => {
      const page = await t.json('/api/gallery?page=1&limit=40')
      const seeded = page.body.images.find((i: { id: string }) => i.id !== sourceId)
      const original = await t.fetch(`/cdn/${seeded.id}.jpg`)
      expect(original.status).toBe(200)
      const stored = await t.fetch(`/cdn/${sourceId}.jpg`)
      expect(new Uint8Array(await original.arrayBuffer())).toEqual(new Uint8Array(await stored.arrayBuffer()))
      const check = await cli('check')
      expect(check.code).toBe(0)
      expect(JSON.parse(check.out)).toMatchObject({
        images: ROWS + 1,
        missingOriginals: [],
        missingThumbnails: [],
        wrongCountDays: 0,
        wrongAlbumCounts: 0,
      })
    },
  )

  test('search finds exactly the listed rows with the word in their filename or public album, as if uploaded', async () => {
    const [yes, no] = t.env.DATABASE_URL ? ['true', 'false'] : ['1', '0']
    const words = await count(
      `WHERE visibility = 'public' AND nsfw = ${no} AND (expires_at IS NULL OR expires_at > ${Date.now()})
       AND (filename LIKE 'sunset-%' OR filename LIKE '%-sunset-%' OR id IN (
         SELECT ai.image_id FROM album_images ai JOIN albums a ON a.id = ai.album_id
         WHERE a.is_public = ${yes} AND (a.title LIKE 'sunset %' OR a.title LIKE '% sunset %')))`,
    )
    expect(words).toBeGreaterThan(0)
    const found = await t.json('/api/search?q=sunset&limit=40')
    expect(found.status).toBe(200)
    expect(found.body.total).toBe(words)
  })

  test('the owner’s albums list the rows put in them (100 each, however many rows); seeded accounts own rows and have profiles', async () => {
    const albums = await t.json('/api/albums', { headers: owner.bearer })
    // 400 rows: every owner's row (the even ones) in an album, 100 to an album.
    expect(albums.body.albums).toHaveLength(2)
    for (const { id } of albums.body.albums) {
      const [held] = await rawRows<{ n: number | string; live: number | string }>(
        t.server.db,
        sql`SELECT count(*) AS n, count(*) - count(CASE WHEN i.expires_at <= ${Date.now()} THEN 1 END) AS live
            FROM album_images ai JOIN images i ON i.id = ai.image_id WHERE ai.album_id = ${id}`,
      )
      expect(Number(held.n)).toBe(100)
      const album = await t.json(`/api/albums/${id}`, { headers: owner.bearer })
      expect(album.body.images).toHaveLength(Number(held.live))
    }
    const members = await rawRows<{ image_id: string }>(t.server.db, sql`SELECT image_id FROM album_images`)
    expect(new Set(members.map((m) => m.image_id)).size).toBe(ROWS / 2)
    const profile = await t.json('/api/users/seed-0')
    expect(profile.status).toBe(200)
    expect(profile.body.total).toBeGreaterThan(0)
  })

  test('the paused triggers are back: an upload after the seed is found by its name and counted', async () => {
    const usage = async () => (await t.json('/api/account/usage', { headers: owner.bearer })).body.totalImages
    const before = await usage()
    // The owner's rows not yet expired, counted by SQL: the counts the seed wrote, less the expired the read subtracts.
    expect(before).toBe(
      await count(`WHERE user_id = ${owner.user.id} AND (expires_at IS NULL OR expires_at > ${Date.now()})`),
    )
    const up = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 32, 32, 3), name: 'zebracrossing.png', type: 'image/png' }]),
    })
    expect(up.status).toBe(201)
    const found = await t.json('/api/search?q=zebracrossing')
    expect(found.body.images.map((i: { id: string }) => i.id)).toEqual([up.body.id])
    expect(await usage()).toBe(before + 1)
  })

  test('refuses a bad row count or source', async () => {
    // Usage errors, as every command's (docs/operations.md).
    expect((await cli('seed', 'many')).code).toBe(2)
    expect((await cli('seed', '10', '--from', 'not-an-id!')).code).toBe(2)
    expect((await cli('seed', '10', '--files', 'copy')).code).toBe(2)
  })
})
