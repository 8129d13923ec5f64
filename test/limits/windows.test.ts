import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { inArray } from 'drizzle-orm'
import { uploadWindows } from '../../src/db/schema'
import { sweepEndedWindows } from '../../src/limits/windows'
import { startTestServer, type TestServer } from '../helpers'

let t: TestServer

beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

describe('ended windows are swept', () => {
  test('a window row older than the longest window goes; one still running stays, and keeps counting', async () => {
    const HOUR = 3_600_000
    // A day ahead of the server's clock: its own sweep (at startup, then on a timer, PostgreSQL's possibly still
    // running) never takes these rows; this call, told it is that late, does.
    const now = Date.now() + 24 * HOUR
    const rows = [
      { key: 'ip:203.0.113.7', windowStart: new Date(now - 2 * HOUR), used: 10 },
      { key: 'refused:ip:203.0.113.7', windowStart: new Date(now - HOUR - 1000), used: 20 },
      { key: 'login:someone', windowStart: new Date(now - 60_000), used: 3 },
      { key: 'user:999999', windowStart: new Date(now - HOUR / 2), used: 4 },
    ]
    await t.server.db.insert(uploadWindows).values(rows)
    expect(await sweepEndedWindows(t.server.db, t.server.deps.config, now)).toBe(2)
    const left = await t.server.db
      .select()
      .from(uploadWindows)
      .where(
        inArray(
          uploadWindows.key,
          rows.map((r) => r.key),
        ),
      )
    expect(left.map((r) => [r.key, r.used]).sort()).toEqual([
      ['login:someone', 3],
      ['user:999999', 4],
    ])
  })
})
