/**
 * The pieces of raw SQL written by engine (src/db/dialect.ts), run on the suite's engine: each is valid SQL there and
 * means what it says.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { rawRows } from '../../src/db/client'
import { dialect, indexedBy, notIndexed, sqlTrue } from '../../src/db/dialect'
import { images } from '../../src/db/schema'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

let t: TestServer

beforeAll(async () => {
  t = await startTestServer()
  const owner = await userWithKey(t)
  const up = await t.fetch('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 8, 8, 1) }]),
  })
  expect(up.status).toBe(201)
})
afterAll(() => t.stop())

const count = async (from: SQL) =>
  Number((await rawRows<{ n: number }>(t.server.db, sql`SELECT count(*) AS n FROM ${from}`))[0]!.n)

describe('dialect', () => {
  test('the true literal is true to the engine: it matches a flag set, not one clear', async () => {
    const [row] = await rawRows<{ yes: unknown }>(t.server.db, sql`SELECT ${sqlTrue} AS yes`)
    expect(row!.yes).toBe(dialect<unknown>({ sqlite: 1, pg: true }))
    expect(await count(sql`${images} WHERE ${images.nsfw} = ${sqlTrue}`)).toBe(0)
    expect(await count(sql`${images} WHERE NOT (${images.nsfw} = ${sqlTrue})`)).toBe(1)
  })

  test('a table read through a named index, or none, holds the same rows', async () => {
    expect(await count(sql`${indexedBy(images, 'images_user_created')}`)).toBe(1)
    expect(await count(sql`${notIndexed(images)}`)).toBe(1)
  })
})
