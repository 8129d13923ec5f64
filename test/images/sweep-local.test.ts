/**
 * The startup sweep (issue 3 item 1): a restart on the same data removes stored files without a row (a crash between
 * writing the files and the row), upload temp files, and half-copied `.partial` files of the local disk, once they are
 * older than the grace period, while every real image keeps its files and is still served.
 *
 * Storage-agnostic where it can be: orphans are planted and looked for through the storage interface, so with
 * STORAGE=s3 (`bun test/run-s3.ts`) the same test covers the bucket. The `.partial` leftover is a local-disk file name
 * (an object store writes atomically and has none), so that part runs only when the storage is local.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import { loadConfig } from '../../src/config'
import { createConfiguredStorage } from '../../src/storage/configured'
import { makeImage, uploadForm } from '../fixtures'
import { eventually, startTestServer, storedKeys, type TestServer, userWithKey } from '../helpers'

// bun 1.4.5 applies test/setup.ts's setDefaultTimeout only to the first file of a multi-file run: say it here too.
const TIMEOUT = 60_000

const dataDir = mkdtempSync(join(tmpdir(), 'imghost-sweep-'))
const scratch = mkdtempSync(join(tmpdir(), 'imghost-sweep-src-'))
let running: TestServer | undefined
afterAll(async () => {
  await running?.stop()
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(scratch, { recursive: true, force: true })
}, TIMEOUT)

describe('startup sweep', () => {
  test(
    'a restart removes orphans and leftovers, and keeps and serves every real image',
    async () => {
      // 1. A real image, uploaded through the API.
      let t = await startTestServer({ DATA_DIR: dataDir })
      running = t
      const local = t.server.deps.config.storage.driver === 'local'
      expect(local).toBe(process.env.STORAGE !== 's3')
      // Restarts must see the same bucket prefix (test/helpers.ts gives every server a fresh one under STORAGE=s3).
      // And the same database on PostgreSQL runs (each server gets a fresh one otherwise).
      const sameStorage: Record<string, string> = {
        DATA_DIR: dataDir,
        ...(t.env.S3_PREFIX ? { S3_PREFIX: t.env.S3_PREFIX } : {}),
        ...(t.env.DATABASE_URL
          ? { DATABASE_URL: t.env.DATABASE_URL, VARIANT_SECRET: t.env.VARIANT_SECRET, TOTP_KEY: t.env.TOTP_KEY }
          : {}),
      }
      const { keyHeader } = await userWithKey(t)
      const bytes = await makeImage('png', 96, 64, 7)
      const up = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: keyHeader,
        body: uploadForm([{ bytes, name: 'keep.png' }]),
      })
      expect(up.status).toBe(201)
      const id: string = up.body.id
      const realKeys = [`originals/${id}.png`, `thumbs/${id}.webp`]
      expect(await storedKeys(t)).toEqual(realKeys.toSorted())
      // Only the server: t.stop() would also drop a PostgreSQL run's database, which the restart must find again.
      await t.server.stop()
      running = undefined

      // 2. While it is stopped: what a crash leaves behind.
      const config = loadConfig({ ...t.env, ...sameStorage })
      const storage = createConfiguredStorage(config)
      let n = 0
      const plant = async (key: string, content: Uint8Array | string) => {
        const path = join(scratch, `plant${n++}`)
        writeFileSync(path, content)
        await storage.put(key, path)
      }
      const orphans = [
        'originals/ZZZZZZZZ.png', // an original without a row
        'thumbs/ZZZZZZZZ.webp', // its thumbnail
        'thumbs/YYYYYYYY.webp', // a thumbnail alone
        `originals/${id}.jpg`, // the real id under another extension: not the row's file
      ]
      for (const key of orphans) await plant(key, await makeImage('png', 8, 8))
      const planted = [...realKeys, ...orphans].sort()
      const listed: string[] = []
      for await (const key of storage.list()) listed.push(key)
      expect(listed.sort()).toEqual(planted)

      // Upload temp files (multipart bodies, metadata rewrites) live under DATA_DIR/tmp.
      const tmpDir = join(dataDir, 'tmp')
      mkdirSync(tmpDir, { recursive: true })
      const tmpLeftovers = [join(tmpDir, 'upload-AAAAAAAABBBBBBBB'), join(tmpDir, 'upload-CCCCCCCCDDDDDDDD.1234.tmp')]
      for (const path of tmpLeftovers) writeFileSync(path, 'half an upload')

      // Local disk only: a copy interrupted before its rename (put across file systems copies to `<key>.partial`).
      const filesDir = join(dataDir, 'files')
      const partials = [
        join(filesDir, 'originals', 'XXXXXXXX.png.partial'),
        join(filesDir, 'thumbs', `${id}.webp.partial`),
      ]
      // A file that is neither a key nor a temp copy is not the service's: the sweep leaves it alone.
      const stranger = join(filesDir, 'originals', 'notes.txt')
      if (local) {
        for (const path of partials) writeFileSync(path, 'half a copy')
        writeFileSync(stranger, 'an operator note')
      }

      // 3. Restart on the same data, as a day later: everything planted is older than the sweep's grace period (which
      // spares files younger than the longest upload; test/faults/sweep.test.ts covers that side).
      t = await startTestServer(sameStorage, { orphanSweep: { graceMs: 0 } })
      running = t
      // The sweep runs in the background from startup on (the start does not wait for it).
      const server = t
      await eventually(
        async () => (await storedKeys(server)).join() === realKeys.toSorted().join(),
        30_000,
        'the sweep',
      )
      for (const path of tmpLeftovers) await eventually(() => !existsSync(path), 30_000, 'temp files swept')
      if (local) {
        for (const path of partials) expect(existsSync(path)).toBe(false)
        // Nothing but the real files (and the stranger) is left on disk.
        expect(readdirSync(join(filesDir, 'originals')).sort()).toEqual([`${id}.png`, 'notes.txt'].sort())
        expect(readdirSync(join(filesDir, 'thumbs'))).toEqual([`${id}.webp`])
      }

      // The real image is intact and served: original byte for byte, thumbnail decodable, API row alive.
      const original = await t.fetch(`/cdn/${id}.png`)
      expect(original.status).toBe(200)
      expect(new Uint8Array(await original.arrayBuffer())).toEqual(bytes)
      const thumb = await t.fetch(`/cdn/medium/${id}.webp`)
      expect(thumb.status).toBe(200)
      const meta = await sharp(Buffer.from(await thumb.arrayBuffer())).metadata()
      expect(meta.format).toBe('webp')
      expect([meta.width, meta.height]).toEqual([96, 64])
      const api = await t.json(`/api/v1/image/${id}`)
      expect(api.status).toBe(200)
      expect(api.body.data).toMatchObject({ id, width: 96, height: 64, size: bytes.length })
      // And the orphans are not served.
      expect((await t.fetch('/cdn/ZZZZZZZZ.png')).status).toBe(404)
      expect((await t.fetch(`/cdn/${id}.jpg`)).status).toBe(404)
    },
    TIMEOUT,
  )
})
