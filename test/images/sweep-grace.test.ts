/**
 * The orphan sweep's grace period (issue 17: a second server's startup sweep deleted the first one's in-flight temp
 * files): files younger than the longest upload are never swept, temp files and stored objects alike; older ones
 * without a row go. It runs at startup and on an interval, so orphans that were young at startup go later.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { HOUR_MS } from '../../src/lib/time'
import { sweepOrphans } from '../../src/modules/images/orphans'
import { SWEEP_GRACE_MS } from '../../src/storage/sweep'
import { eventually } from '../faults/support'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, storedKeys, type TestServer, userWithKey } from '../helpers'

const TIMEOUT = 60_000
const servers: TestServer[] = []
afterAll(async () => {
  for (const t of servers) await t.stop()
}, TIMEOUT)

async function withImage(overrides: Parameters<typeof startTestServer>[1] = {}) {
  const t = await startTestServer({}, overrides)
  servers.push(t)
  const owner = await userWithKey(t)
  const up = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 32, 32, 1), name: 'real.png' }]),
  })
  expect(up.status).toBe(201)
  return { t, real: [`originals/${up.body.id}.png`, `thumbs/${up.body.id}.webp`] }
}

/** Plants a stored object without a row, through the storage interface (so a bucket works too). */
async function plantObject(t: TestServer, key: string) {
  const path = join(t.dataDir, `plant-${key.replace('/', '-')}`)
  writeFileSync(path, await makeImage('png', 8, 8))
  await t.server.deps.storage.put(key, path)
}

function plantTemp(t: TestServer, name: string, ageMs = 0) {
  const dir = join(t.dataDir, 'tmp')
  mkdirSync(dir, { recursive: true })
  const path = join(dir, name)
  writeFileSync(path, 'half an upload')
  if (ageMs) utimesSync(path, new Date(Date.now() - ageMs), new Date(Date.now() - ageMs))
  return path
}

describe('orphan sweep grace period', () => {
  test(
    'young orphans and temp files are spared; the same ones are swept once past the grace',
    async () => {
      const { t, real } = await withImage()
      const { db, storage } = t.server.deps
      const tmpDir = join(t.dataDir, 'tmp')
      await plantObject(t, 'originals/YoungOne.png')
      await plantObject(t, 'thumbs/YoungOne.webp')
      const temp = plantTemp(t, 'upload-inflight')

      expect(await sweepOrphans(db, storage, tmpDir)).toBe(0)
      expect(await storedKeys(t)).toEqual([...real, 'originals/YoungOne.png', 'thumbs/YoungOne.webp'].sort())
      expect(existsSync(temp)).toBe(true)

      // A sweep run a minute past the grace period finds them old.
      expect(await sweepOrphans(db, storage, tmpDir, { now: Date.now() + SWEEP_GRACE_MS + 60_000 })).toBe(3)
      expect(await storedKeys(t)).toEqual(real.toSorted())
      expect(existsSync(temp)).toBe(false)
    },
    TIMEOUT,
  )

  test(
    'the sweep runs on an interval too: old leftovers go without a restart, young ones stay',
    async () => {
      const { t, real } = await withImage({ orphanSweep: { intervalMs: 200 } })
      const local = t.server.deps.config.storage.driver === 'local'
      const old = SWEEP_GRACE_MS + HOUR_MS
      const oldTemp = plantTemp(t, 'upload-abandoned', old)
      const youngTemp = plantTemp(t, 'upload-inflight')
      await plantObject(t, 'originals/YoungTwo.png')
      // On local disk an object's age is its file's mtime, which the test can set (a bucket's LastModified it cannot).
      const oldObject = join(t.dataDir, 'files', 'originals', 'OldOrphn.png')
      const oldPartial = join(t.dataDir, 'files', 'thumbs', 'OldOrphn.webp.partial')
      const youngPartial = join(t.dataDir, 'files', 'thumbs', 'YoungTwo.webp.partial')
      if (local) {
        for (const path of [oldObject, oldPartial, youngPartial]) writeFileSync(path, 'x')
        for (const path of [oldObject, oldPartial])
          utimesSync(path, new Date(Date.now() - old), new Date(Date.now() - old))
      }

      await eventually(() => !existsSync(oldTemp), 10_000, 'the old temp file swept')
      if (local)
        await eventually(
          () => !existsSync(oldObject) && !existsSync(oldPartial),
          10_000,
          'the old object and copy swept',
        )
      expect(existsSync(youngTemp)).toBe(true)
      if (local) expect(existsSync(youngPartial)).toBe(true)
      expect(await storedKeys(t)).toEqual([...real, 'originals/YoungTwo.png'].sort())
    },
    TIMEOUT,
  )
})
