/**
 * A search's scope (its full-text lookup) is kept until the change feed the list reads are given tells a change of the
 * images, and looked up again after it (a read Worker passes its connection's feed, which tells every commit of the
 * server's: reads.test.ts shows searches right after uploads finding them). Here the test tells the feed's changes
 * itself, so what is kept shows: an upload the database has is not found until a change is told.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ChangeFeed, ChangeListener } from '../../src/db/changes'
import { listReads } from '../../src/modules/images/list-reads'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

/** A change feed that tells what the test says, when it says it. */
function toldFeed() {
  const listeners: ChangeListener[] = []
  const feed: ChangeFeed = {
    on: (_table, listener) => void listeners.push(listener),
    catchUp() {},
    changedHere() {},
    quietly: (_table, write) => write(),
    close: async () => {},
  }
  const tell = () => {
    for (const listener of listeners) listener(null)
  }
  return { feed, tell }
}

describe('search scopes kept until a change is told', () => {
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

  test('the same words and scope answer from what was kept until a change is told; other words look up', async () => {
    const changes = toldFeed()
    const reads = listReads(t.server.db, changes.feed)
    const first = await upload('harbour-one.png', 1)
    const before = await reads.search(['harbour'], 1000, page, Date.now())
    expect(ids(before)).toEqual([first])

    const second = await upload('harbour-two.png', 2)
    // The database has it (a search without kept scopes finds it), the kept scope does not.
    expect(ids(await listReads(t.server.db).search(['harbour'], 1000, page, Date.now()))).toEqual([second, first])
    expect(ids(await reads.search(['harbour'], 1000, page, Date.now()))).toEqual([first])
    // Another scope of the same words is its own lookup.
    expect(ids(await reads.search(['harbour'], 1, page, Date.now()))).toEqual([second])

    changes.tell()
    const after = await reads.search(['harbour'], 1000, page, Date.now())
    expect(ids(after)).toEqual([second, first])
    expect(after.total).toBe(2)
  })
})
