/**
 * /healthz commits a probe row to know the database can be written; each commit makes every SQLite reader start its
 * page cache afresh, so a healthy verdict stands 10 s (src/modules/health/index.ts). A fault met by a request makes the
 * next check write again at once: test/faults/read-only.test.ts, lock.test.ts and postgres.test.ts.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { healthProbe } from '../../src/db/schema'
import { startTestServer, type TestServer } from '../helpers'

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
}, 60_000)
afterAll(() => t?.stop())

const probeWrittenAt = async () => {
  const rows = await t.server.db.select({ at: healthProbe.checkedAt }).from(healthProbe)
  return rows[0]?.at.getTime()
}

test('a flood of health checks over more than a second writes the probe once while healthy', async () => {
  expect((await t.fetch('/healthz')).status).toBe(200)
  const first = await probeWrittenAt()
  expect(first).toBeNumber()
  const since = Date.now()
  // Longer than the verdict of a failed check stands (1 s): each of these would write again if it were the healthy one's.
  while (Date.now() - since < 1500) {
    expect((await t.fetch('/healthz')).status).toBe(200)
    await Bun.sleep(50)
  }
  expect(await probeWrittenAt()).toBe(first!)
})
