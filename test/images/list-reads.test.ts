/**
 * A search's scope (its full-text lookup) is kept while the version the list reads are given stays the same, and
 * looked up again once it moves (a read Worker passes SQLite's data_version, which every commit of the server's moves:
 * reads.test.ts shows searches right after uploads finding them). Here the test holds the version, so what is kept
 * shows: an upload the database has is not found until the version moves.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { listReads } from '../../src/modules/images/list-reads'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

describe('search scopes kept while the version stays', () => {
  let t: TestServer
  let owner: Awaited<ReturnType<typeof userWithKey>>
  const upload = async (name: string, seed: number) => {
    const up = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 16, 16, seed), name }]),
    })
    expect(up.status).toBe(201)
    return up.body.id as string
  }
  const page = { page: 1, limit: 40, offset: 0 }
  const ids = (result: { rows: { image: { id: string } }[] }) => result.rows.map((r) => r.image.id)

  beforeAll(async () => {
    t = await startTestServer()
    owner = await userWithKey(t)
  })
  afterAll(async () => {
    await t.stop()
  })

  test('the same words and scope answer from what was kept until the version moves; other words look up', async () => {
    let version = 1
    const reads = listReads(t.server.db, () => version)
    const first = await upload('harbour-one.png', 1)
    const before = await reads.search(['harbour'], 1000, page, Date.now())
    expect(ids(before)).toEqual([first])

    const second = await upload('harbour-two.png', 2)
    // The database has it (a search without kept scopes finds it), the kept scope does not.
    expect(ids(await listReads(t.server.db).search(['harbour'], 1000, page, Date.now()))).toEqual([second, first])
    expect(ids(await reads.search(['harbour'], 1000, page, Date.now()))).toEqual([first])
    // Another scope of the same words is its own lookup.
    expect(ids(await reads.search(['harbour'], 1, page, Date.now()))).toEqual([second])

    version++
    const after = await reads.search(['harbour'], 1000, page, Date.now())
    expect(ids(after)).toEqual([second, first])
    expect(after.total).toBe(2)
  })
})
