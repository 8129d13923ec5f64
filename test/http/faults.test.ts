/**
 * The one mapping of faults (src/http/errors.ts), on both paths: the app's error model and the routes Bun answers
 * ahead of it (fast-route.ts). Each route meets a real SQLite or disk fault: a read-only reopen of a database
 * (SQLITE_READONLY), a write lock held by another connection (SQLITE_BUSY), a database at its page limit
 * (SQLITE_FULL), a write into a full file system (ENOSPC: /dev/full). Statuses, Retry-After and words must match.
 */
import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, spyOn, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { engine } from '../../src/db/engine'
import { errorModel } from '../../src/http/errors'
import { fastRoute } from '../../src/http/fast-route'
import { createMetrics } from '../../src/http/observability'

const dir = mkdtempSync(join(tmpdir(), 'imghost-faultmap-'))
const path = join(dir, 'f.sqlite')
const setup = new Database(path)
setup.exec('PRAGMA journal_mode = WAL')
setup.exec('CREATE TABLE t (x TEXT)')

const readOnly = new Database(path, { readonly: true })
const writer = new Database(path)
writer.exec('PRAGMA busy_timeout = 0')
const holder = new Database(path)
const full = new Database(join(dir, 'full.sqlite'))
full.exec('CREATE TABLE t (x TEXT)')
full.exec(`PRAGMA max_page_count = ${(full.query('PRAGMA page_count').get() as { page_count: number }).page_count}`)

const faults: Record<string, () => unknown> = {
  readonly: () => readOnly.run("INSERT INTO t VALUES ('x')"),
  busy: () => {
    holder.exec('BEGIN EXCLUSIVE')
    try {
      return writer.run("INSERT INTO t VALUES ('x')")
    } finally {
      holder.exec('ROLLBACK')
    }
  },
  full: () => full.run('INSERT INTO t VALUES (?)', ['x'.repeat(100_000)]),
  enospc: () => writeFileSync('/dev/full', 'x'),
}

const observe = { metrics: createMetrics(), log: false }
const fast = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  routes: Object.fromEntries(
    Object.entries(faults).map(([name, fault]) => [
      `/${name}`,
      { GET: fastRoute(observe, `/${name}`, () => fault() as Response) },
    ]),
  ),
})
const app = new Elysia().use(errorModel)
for (const [name, fault] of Object.entries(faults)) app.get(`/${name}`, () => fault() as string)
app.listen({ hostname: '127.0.0.1', port: 0 })

afterAll(() => {
  fast.stop(true)
  void app.stop(true)
  for (const db of [setup, readOnly, writer, holder, full]) db.close()
  rmSync(dir, { recursive: true, force: true })
})

const expected = {
  readonly: { status: 503, retryAfter: true, error: /database is read-only/ },
  busy: { status: 503, retryAfter: true, error: /database is busy/ },
  full: { status: 507, retryAfter: false, error: /^The server's storage is full; nothing was stored$/ },
  enospc: { status: 507, retryAfter: false, error: /^The server's storage is full; nothing was stored$/ },
}

describe('faults are answered in words, with their status, on both paths', () => {
  for (const [which, server] of [
    ['app (error model)', () => app.server!.port],
    ['fast route', () => fast.port],
  ] as const) {
    for (const [name, want] of Object.entries(expected)) {
      // SQLite's own faults are never met by a PostgreSQL server (its faults are the lead's tests); ENOSPC is anyone's.
      test.skipIf(engine === 'pg' && name !== 'enospc')(`${which}: ${name}`, async () => {
        const logged = spyOn(console, 'error').mockImplementation(() => {})
        try {
          const res = await fetch(`http://127.0.0.1:${server()}/${name}`)
          expect(res.status).toBe(want.status)
          expect(res.headers.get('content-type')).toContain('application/json')
          expect(res.headers.get('x-content-type-options')).toBe('nosniff')
          if (want.retryAfter) expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
          else expect(res.headers.get('retry-after')).toBeNull()
          const body = await res.json()
          expect(Object.keys(body)).toEqual(['error'])
          expect(body.error).toMatch(want.error)
          // The operator's log names the cause.
          expect(logged.mock.calls.some(([line]) => String(line).includes('"msg":"fault"'))).toBe(true)
        } finally {
          logged.mockRestore()
        }
      })
    }
  }
})
