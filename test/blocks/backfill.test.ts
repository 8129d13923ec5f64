/**
 * The perceptual hash backfill (src/modules/images/phash-backfill.ts): images stored before migration 0008 (here:
 * uploaded, then their `phash` set back to NULL) get the hash an upload of the same bytes gets, so blocking them
 * refuses their copies; a picture too plain to hash is tried once; `cli rehash` does it all at once. The background
 * run is driven by calling its step, batch by batch, from the test; the last test restarts the server on old rows.
 */

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import sharp from 'sharp'
import { images } from '../../src/db/schema'
import { originalKey } from '../../src/storage'
import { uploadForm } from '../fixtures'
import {
  eventually,
  freePort,
  jsonBody,
  makeAdmin,
  registerUser,
  startTestServer,
  type TestServer,
  userWithKey,
} from '../helpers'
import { writeBehindCaches } from '../other-connection'
import { copies, picture } from './pictures'

const root = join(import.meta.dir, '..', '..')
let t: TestServer
let who: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startTestServer({ UPLOADS_PER_HOUR: '1000' })
  who = await userWithKey(t)
})
afterAll(async () => {
  await t.stop()
  // After a restart on the same data directory (the last test), t.stop removes only the unused one it made.
  rmSync(t.dataDir, { recursive: true, force: true })
})

async function upload(bytes: Uint8Array) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: who.keyHeader,
    body: uploadForm([{ bytes: bytes as Uint8Array<ArrayBuffer>, name: 'a.png' }]),
  })
  return res
}

const extOf = async (id: string) =>
  (await t.server.db.select({ ext: images.ext }).from(images).where(eq(images.id, id)))[0]!.ext
const row = async (id: string) =>
  (
    await t.server.db.select({ phash: images.phash, tried: images.phashTried }).from(images).where(eq(images.id, id))
  )[0]!
const phashOf = async (id: string) => (await row(id)).phash
/** The rows as stored before 0008: no hash, never tried. */
const asBefore0008 = async (...ids: string[]) => {
  for (const id of ids)
    await t.server.db.update(images).set({ phash: null, phashTried: false }).where(eq(images.id, id))
}

const plain = () =>
  sharp({ create: { width: 200, height: 150, channels: 3, background: '#808080' } })
    .png()
    .toBuffer()
    .then((b) => new Uint8Array(b))

describe('perceptual hash backfill', () => {
  test('old rows get the hash of an upload of the same bytes; a plain picture is tried once; a blocked one stays out', async () => {
    const original = await picture(7100)
    const a = (await upload(original)).body
    const b = (await upload(await picture(7101))).body
    const flat = (await upload(await plain())).body
    const hashes = [await phashOf(a.id), await phashOf(b.id)]
    expect(hashes).toEqual([expect.stringMatching(/^[0-9a-f]{16}$/), expect.stringMatching(/^[0-9a-f]{16}$/)])
    // Hashed at upload: a plain picture's null is final, the backfill leaves it alone.
    expect(await row(flat.id)).toEqual({ phash: null, tried: true })
    expect(await t.server.phashBackfill.step()).toEqual({ hashed: 0, plain: 0, failed: 0 })
    await asBefore0008(a.id, b.id, flat.id)

    expect(await t.server.phashBackfill.step()).toEqual({ hashed: 2, plain: 1, failed: 0 })
    expect([await phashOf(a.id), await phashOf(b.id)]).toEqual(hashes)
    // The plain picture keeps "no hash" (what the blocklist reads) and is not tried again.
    expect(await row(flat.id)).toEqual({ phash: null, tried: true })
    expect(await t.server.phashBackfill.step()).toEqual({ hashed: 0, plain: 0, failed: 0 })

    // Blocking the backfilled image records its perceptual hash: a copy with other bytes is refused.
    const admin = await registerUser(t)
    await makeAdmin(t, admin.user.id)
    const blocked = await t.json(`/api/admin/images/${a.id}/block`, { method: 'POST', ...jsonBody({}, admin.bearer) })
    expect(blocked.status).toBe(200)
    const copy = (await copies(original))['resized 70% at quality 70']!
    const refused = await upload(copy)
    expect([refused.status, refused.body.error]).toEqual([400, expect.any(String)])
    expect((await upload(await picture(7102))).status).toBe(201)
  })

  test('an image whose original cannot be read is skipped for this run, not marked tried', async () => {
    const lost = (await upload(await picture(7200))).body
    await asBefore0008(lost.id)
    await t.server.deps.storage.delete(originalKey(lost.id, await extOf(lost.id)))
    expect(await t.server.phashBackfill.step()).toEqual({ hashed: 0, plain: 0, failed: 1 })
    expect(await t.server.phashBackfill.step()).toEqual({ hashed: 0, plain: 0, failed: 0 })
    expect(await row(lost.id)).toEqual({ phash: null, tried: false })
  })

  test('cli rehash hashes every old row to completion', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push((await upload(await picture(7300 + i))).body.id)
    const hashes = await Promise.all(ids.map(phashOf))
    await asBefore0008(...ids)
    const proc = Bun.spawnSync([process.execPath, join(root, 'src/cli.ts'), 'rehash'], {
      env: { ...t.env, PATH: process.env.PATH ?? '' },
      cwd: root,
    })
    // The unreadable image of the test before is tried again in this new run, and still fails (exit 2).
    expect(proc.exitCode).toBe(2)
    expect(proc.stdout.toString()).toContain('3 images hashed, 0 too plain to hash, 1 could not be read\n')
    expect(await Promise.all(ids.map(phashOf))).toEqual(hashes)
  })

  test('the server hashes old rows in the background from its start', async () => {
    const id = (await upload(await picture(7400))).body.id
    const hash = await phashOf(id)
    // The same data directory, as an upgrade finds it (t.stop would remove it).
    await t.server.stop()
    await writeBehindCaches(t, 'UPDATE images SET phash = NULL, phash_tried = FALSE WHERE id = $1', [id])
    t = await startTestServer({ ...t.env, PORT: String(freePort()) })
    await eventually(async () => (await phashOf(id)) !== null, 30_000, 'the background backfill')
    expect(await phashOf(id)).toBe(hash)
  })
})
