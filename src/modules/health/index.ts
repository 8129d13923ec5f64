import { statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client'
import { notFound, StorageFull, unauthorized } from '../../errors'
import { errors, faultAnswer, HttpError, httpErrorOf } from '../../http/errors'
import type { Metrics } from '../../http/observability'
import { safeEqual } from '../../lib/crypto'
import type { Classifier } from '../../moderation'
import { VERSION } from '../../version'
import { storageUsed } from '../images/repository'
import { writeProbe } from './repository'

/** How long a check's verdict stands: a flood of health checks costs one small write a second at most. */
const CHECK_TTL_MS = 1000
/**
 * Below this much free space where the database lives (DATA_DIR), the service counts as down: uploads (their temp
 * files, stored files, rows) would fail, even while the database's write-ahead log still has room to reuse.
 */
const MIN_FREE_BYTES = 1024 * 1024

/**
 * Whether the service can write: the database, by writing one row of `health_probe` and committing it (a read-only
 * file or mount, a lock held by another process, a full disk all fail it, where a read or a rolled-back transaction
 * would pass), and the free space of its file system (statfs). Returns the answer's error, or null when both pass.
 */
function writeCheck(db: Db) {
  const dir = dirname(db.$client.filename)
  let checked = { at: -Infinity, failure: null as HttpError | null }
  const check = (now: number): HttpError | null => {
    try {
      writeProbe(db, now)
    } catch (error) {
      return faultAnswer(error) ?? new HttpError(503, 'Database unavailable')
    }
    const { bavail, bsize } = statfsSync(dir)
    return bavail * bsize < MIN_FREE_BYTES ? httpErrorOf(new StorageFull()) : null
  }
  return () => {
    const now = Date.now()
    if (now - checked.at >= CHECK_TTL_MS) checked = { at: now, failure: check(now) }
    return checked.failure
  }
}

/** Operator endpoints: liveness, and Prometheus metrics behind a bearer token (off when no token is set). */
export function healthModule(deps: { db: Db; metrics: Metrics; metricsToken: string; classifier: Classifier }) {
  const { db } = deps
  const databaseWritable = writeCheck(db)
  return new Elysia({ name: 'module-health' })
    .get(
      '/healthz',
      ({ set }) => {
        const failure = databaseWritable()
        if (!failure) return { status: 'ok' as const, version: VERSION }
        // A 507 (disk full) is a 503 here: the service is unavailable, whatever the cause, and says which.
        set.status = 503
        Object.assign(set.headers, failure.headers)
        return { error: failure.message } as never
      },
      {
        response: { 200: t.Object({ status: t.Literal('ok'), version: t.String() }), ...errors(503) },
        detail: {
          tags: ['Operations'],
          summary:
            'Liveness: the database can be written and its disk has room (checked at most once a second); the running version',
        },
      },
    )
    .get(
      '/metrics',
      ({ headers, set }) => {
        if (!deps.metricsToken) throw notFound()
        const given = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1] ?? ''
        if (!safeEqual(given, deps.metricsToken)) throw unauthorized('Missing or wrong metrics token')
        const storageUsedBytes = storageUsed(db)
        set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
        return deps.metrics.render({ storageUsedBytes, queueDepth: deps.classifier.queueDepth })
      },
      { detail: { hide: true } },
    )
}
