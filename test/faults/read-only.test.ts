/**
 * Fault: the database cannot be written (issue 17: with a read-only SQLite file, 2116 of 2117 uploads and 78 of 80
 * `GET /api/v1/me` failed with a bare 500, since every API-key request wrote lastUsedAt, and /healthz said ok).
 *
 * The tests run as root, for whom file modes do not stop a write, so the file is made immutable instead
 * (`chattr +i` on the database and its WAL): the kernel then refuses every write to them, through the server's open
 * descriptors too, exactly as a read-only file or mount does for an ordinary user.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { engine } from '../../src/db/engine'
import { makeImage, uploadForm } from '../fixtures'
import { sqliteOf, startTestServer, type TestServer, userWithKey } from '../helpers'
import { ANSWER_BOUND_MS, committedViews, dataState, eventually, timed } from './support'

const TIMEOUT = 60_000

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let dbFiles: string[]

const chattr = (flag: '+i' | '-i') => Bun.spawnSync(['chattr', flag, ...dbFiles], { stderr: 'pipe' })

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  const db = join(t.dataDir, 'imghost.sqlite')
  dbFiles = [db, `${db}-wal`]
}, TIMEOUT)
afterAll(async () => {
  if (dbFiles) chattr('-i')
  await t?.stop()
}, TIMEOUT)

// An immutable SQLite file and its WAL: a PostgreSQL server's database is not a file of the data directory.
describe.skipIf(engine === 'pg')('a database that cannot be written', () => {
  test(
    'API-key reads answer, uploads get 503 saying read-only with nothing stored, /healthz 503; all works after',
    async () => {
      const bytes = await makeImage('png', 80, 60, 4)
      const first = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes, name: 'before.png' }]),
      })
      expect(first.status).toBe(201)
      const id: string = first.body.id
      const before = await dataState(t)
      // A healthy verdict stands 10 s: the refused uploads below must end it.
      expect((await t.fetch('/healthz')).status).toBe(200)

      const made = chattr('+i')
      if (made.exitCode !== 0) {
        console.warn(
          `skipped: chattr +i is refused here (${made.stderr.toString().trim()}); it needs root on a file system with immutable files`,
        )
        return
      }
      try {
        // Every API-key read answers (the key's use is noted in memory, not written on the request).
        for (let i = 0; i < 20; i++) {
          const me = await timed(() => t.json('/api/v1/me', { headers: owner.keyHeader }))
          expect(me.value.status).toBe(200)
          expect(me.ms).toBeLessThan(ANSWER_BOUND_MS)
        }
        for (let i = 0; i < 3; i++) expect((await t.fetch(`/cdn/${id}.png`)).status).toBe(200)

        // Uploads, with a key and anonymous: 503, Retry-After, in words; the files they stored went again.
        for (const [path, headers] of [
          ['/api/v1/upload', owner.keyHeader],
          ['/api/upload', {}],
        ] as const) {
          const up = await t.json(path, {
            method: 'POST',
            headers,
            body: uploadForm([{ bytes: await makeImage('png', 40, 40, 5), name: 'during.png' }]),
          })
          expect(up.status).toBe(503)
          expect(up.headers.get('retry-after')).toMatch(/^\d+$/)
          expect(up.body.error).toMatch(/read-only/)
        }
        expect(await dataState(t)).toEqual(before)

        // The uploads met the fault: /healthz checks again at once, writing to find out.
        const health = await t.json('/healthz')
        expect(health.status).toBe(503)
        expect(health.body.error).toMatch(/read-only/)
        expect(health.headers.get('retry-after')).toMatch(/^\d+$/)
      } finally {
        chattr('-i')
      }

      // Afterwards: healthy, uploads work, the buffered views and the key's use are written, the first image is intact.
      await eventually(async () => (await t.fetch('/healthz')).status === 200, 5000, '/healthz ok')
      const after = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 40, 6), name: 'after.png' }]),
      })
      expect(after.status).toBe(201)
      await eventually(async () => (await committedViews(t, id)) === 3, 10_000, 'the 3 buffered views committed')
      await eventually(
        async () => (await t.json('/api/keys', { headers: owner.bearer })).body.keys[0].lastUsedAt !== null,
        10_000,
        'lastUsedAt written',
      )
      expect(new Uint8Array(await (await t.fetch(`/cdn/${id}.png`)).arrayBuffer())).toEqual(bytes)
      // The WAL checkpoints stayed on their Worker: the server's own connection never took them back.
      expect(sqliteOf(t.server.db).$client.query('PRAGMA wal_autocheckpoint').get()).toEqual({ wal_autocheckpoint: 0 })
    },
    TIMEOUT,
  )
})
