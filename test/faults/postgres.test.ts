/**
 * Faults of a PostgreSQL server (`npm run test:pg`; SQLite's own are read-only.test.ts and lock.test.ts): a database
 * that refuses writes (a standby, or `default_transaction_read_only`) answers 503 saying read-only, with nothing
 * stored, and /healthz says so; reads keep answering; all works again once it takes writes. A database that cannot be
 * reached answers 503 saying so, to every request, and all works again once it can be. A writer lock held by another
 * session (an instance stuck in a transaction) answers writes 503 busy once the lock timeout passes, not a stall.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { WRITER_LOCK } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'
import { dataState, eventually } from './support'

const TIMEOUT = 60_000

describe.skipIf(engine !== 'pg')(
  'PostgreSQL faults: a database that refuses writes, a held writer lock, a database that cannot be reached',
  () => {
    let t: TestServer
    let owner: Awaited<ReturnType<typeof userWithKey>>
    /** The admin connection the test changes the server's database with. */
    let admin: SQL

    beforeAll(async () => {
      t = await startTestServer()
      owner = await userWithKey(t)
      admin = new SQL(process.env.PG_TEST_URL!)
    }, TIMEOUT)
    afterAll(async () => {
      await admin?.close()
      await t?.stop()
    }, TIMEOUT)

    /** One upload of a small PNG made from `seed`, by the owner's key. */
    const uploadOnce = async (seed: number) =>
      t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 30, seed) }]),
      })

    /**
     * An upload, sent again while the answer is the 503 of a lost connection: the pool's connections the test ended
     * each fail once ("cannot be reached", a clear 503 too), then are made anew.
     */
    async function upload(seed: number) {
      for (let i = 0; ; i++) {
        const res = await uploadOnce(seed)
        if (res.status !== 503 || !String(res.body.error).includes('cannot be reached') || i >= 20) return res
        expect(res.headers.get('retry-after')).toBeTruthy()
      }
    }
    /** The data's state, read again while the server's pool still hands out connections the test ended. */
    async function settledState() {
      for (let i = 0; ; i++) {
        try {
          return await dataState(t)
        } catch (error) {
          if (i >= 20) throw error
        }
      }
    }

    const database = () => new URL(t.env.DATABASE_URL!).pathname.slice(1)
    /** Sets the database read-only (or not) for new sessions, and ends the server's: its pool reconnects to the new rule. */
    async function readOnly(on: boolean) {
      await admin.unsafe(`ALTER DATABASE "${database()}" SET default_transaction_read_only = ${on ? 'on' : 'off'}`)
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${database()} AND pid <> pg_backend_pid()`
    }

    test(
      'uploads get 503 saying read-only with nothing stored, /healthz 503, reads answer; all works after',
      async () => {
        const first = await upload(1)
        expect(first.status).toBe(201)
        const before = await settledState()
        await readOnly(true)
        try {
          const refused = await upload(2)
          expect(refused.status).toBe(503)
          expect(refused.body.error).toContain('read-only')
          expect(refused.headers.get('retry-after')).toBeTruthy()
          const health = await t.json('/healthz')
          expect(health.status).toBe(503)
          expect(health.body.error).toContain('read-only')
          expect((await t.json(`/api/v1/image/${first.body.id}`)).status).toBe(200)
          expect((await t.json('/api/v1/me', { headers: owner.keyHeader })).status).toBe(200)
        } finally {
          await readOnly(false)
        }
        // Nothing of the refused uploads was kept: rows and files as before.
        expect(await settledState()).toEqual(before)
        expect((await upload(4)).status).toBe(201)
      },
      TIMEOUT,
    )

    test(
      'the writer lock held by another session: writes 503 busy with Retry-After (not a stall), nothing stored, reads answer; all works once it is let go',
      async () => {
        const before = await settledState()
        // Another instance in the middle of a transaction, as every writer's starts: holding the writer lock (an
        // advisory lock, so taken in the server's own database).
        const other = new SQL(t.env.DATABASE_URL!)
        const holder = await other.reserve()
        await holder`BEGIN`
        await holder`SELECT pg_advisory_xact_lock(${WRITER_LOCK})`
        try {
          const refused = await uploadOnce(7)
          expect(refused.status).toBe(503)
          expect(refused.body.error).toContain('busy')
          expect(refused.headers.get('retry-after')).toBeTruthy()
          expect((await t.json('/api/v1/me', { headers: owner.keyHeader })).status).toBe(200)
        } finally {
          await holder`ROLLBACK`
          holder.release()
          await other.close()
        }
        expect(await settledState()).toEqual(before)
        expect((await upload(8)).status).toBe(201)
      },
      TIMEOUT,
    )

    test(
      'a database that cannot be reached: every request 503 "cannot be reached" with Retry-After, nothing stored; all works once it is back',
      async () => {
        const before = await settledState()
        // No new session may open, superusers' included, and the server's are ended: its pool cannot get one.
        await admin.unsafe(`ALTER DATABASE "${database()}" ALLOW_CONNECTIONS false`)
        await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${database()} AND pid <> pg_backend_pid()`
        try {
          for (const res of [await uploadOnce(5), await t.json('/api/v1/me', { headers: owner.keyHeader })]) {
            expect(res.status).toBe(503)
            expect(res.body.error).toContain('cannot be reached')
            expect(res.headers.get('retry-after')).toBeTruthy()
          }
          // /healthz checks again once a request met the fault: it comes to say so too.
          await eventually(
            async () => String((await t.json('/healthz')).body.error).includes('cannot be reached'),
            10_000,
            '/healthz to say the database cannot be reached',
          )
          expect((await t.json('/healthz')).status).toBe(503)
        } finally {
          await admin.unsafe(`ALTER DATABASE "${database()}" ALLOW_CONNECTIONS true`)
        }
        expect(await settledState()).toEqual(before)
        expect((await upload(6)).status).toBe(201)
      },
      TIMEOUT,
    )
  },
)
