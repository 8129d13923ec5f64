/**
 * Variant rows whose image is gone (a crash between the two deletes) are dropped by the orphan sweep and `cli check`
 * (forgetOrphanVariants), a batch of the table at a time: rows of images that still exist stay, whichever batch they
 * fall in.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { asc } from 'drizzle-orm'
import { variants } from '../../src/db/schema'
import { forgetOrphanVariants } from '../../src/modules/variants/repository'
import { makeImage } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'
import { upload } from './support'

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

test('rows of gone images go, across several batches; rows of a live image stay', async () => {
  const owner = await userWithKey(t)
  const kept = await upload(t, owner.keyHeader, await makeImage('png', 16, 16, 3), 'kept.png')
  const { db } = t.server.deps
  // Keys interleave live and gone images, so every batch of the walk holds both.
  const rows = Array.from({ length: 1300 }, (_, i) => ({
    key: `variants/${String(i).padStart(5, '0')}-${i % 3 === 0 ? kept.id : `Gone${i}`}.webp`,
    imageId: i % 3 === 0 ? kept.id : `Gone${i}`,
    bytes: 10,
    lastUsedAt: new Date(),
  }))
  for (let i = 0; i < rows.length; i += 200) await db.insert(variants).values(rows.slice(i, i + 200))

  await forgetOrphanVariants(db)

  const left = await db.select({ key: variants.key }).from(variants).orderBy(asc(variants.key))
  const live = rows.filter((r) => r.imageId === kept.id).map((r) => r.key)
  expect(live.length).toBe(434)
  expect(left.map((r) => r.key)).toEqual(live)
})
