/**
 * /healthz asks the image store too (issue 36, point 9: it answered 200 through a 20 s bucket outage while every /cdn
 * read and upload failed, so a balancer kept the instance in). A bucket whose server is killed, and a files directory
 * that cannot be written, make it 503 saying which part failed; it is 200 again once the store is back.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../helpers'
import { spawnS3Server } from '../s3-server'

const TIMEOUT = 60_000
const servers: TestServer[] = []
afterAll(async () => {
  for (const t of servers) await t.stop()
})

/** Polls /healthz until it answers `status`; returns that answer. */
async function healthWhen(t: TestServer, status: number) {
  const end = Date.now() + 30_000
  for (;;) {
    const answer = await t.json('/healthz')
    if (answer.status === status) return answer
    if (Date.now() > end) throw new Error(`/healthz still ${answer.status}: ${JSON.stringify(answer.body)}`)
    await Bun.sleep(100)
  }
}

describe('the object store', () => {
  test(
    'stopped: /healthz 503 naming the store, with Retry-After; back: 200',
    async () => {
      const s3 = await spawnS3Server()
      const t = await startTestServer({ ...s3.env, S3_PREFIX: 'health/' })
      servers.push(t)
      expect((await t.json('/healthz')).status).toBe(200)

      await s3.kill()
      const down = await healthWhen(t, 503)
      expect(down.body.error).toMatch(/^Storage unavailable: the object store/)
      expect(down.body.error).not.toMatch(/database/i)
      expect(down.headers.get('retry-after')).toMatch(/^\d+$/)

      const back = await spawnS3Server({ port: s3.port, dir: s3.dir })
      try {
        expect((await healthWhen(t, 200)).body.status).toBe('ok')
      } finally {
        await back.kill()
      }
    },
    TIMEOUT,
  )
})

// Root ignores file modes, so the directory is made immutable (as test/faults/read-only.test.ts does the database).
describe('the files directory on local disk', () => {
  test(
    'that cannot be written: /healthz 503 naming it; writable again: 200',
    async () => {
      const t = await startTestServer({ STORAGE: 'local' })
      servers.push(t)
      expect((await t.json('/healthz')).status).toBe(200)
      const originals = join(t.server.deps.config.paths.filesDir, 'originals')
      const chattr = (flag: '+i' | '-i') => Bun.spawnSync(['chattr', flag, originals], { stderr: 'pipe' })
      const made = chattr('+i')
      if (made.exitCode !== 0) {
        console.warn(`skipped: chattr +i is refused here (${made.stderr.toString().trim()})`)
        return
      }
      try {
        const down = await healthWhen(t, 503)
        expect(down.body.error).toBe('Storage unavailable: the files directory originals/ cannot be read and written')
      } finally {
        chattr('-i')
      }
      expect((await healthWhen(t, 200)).body.status).toBe('ok')
    },
    TIMEOUT,
  )
})
