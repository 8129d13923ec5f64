import { Elysia, t } from 'elysia'
import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { healthProbe, images } from '../../db/schema'
import { errors, faultAnswer, HttpError, notFound, unauthorized } from '../../http/errors'
import type { Metrics } from '../../http/observability'
import { safeEqual } from '../../lib/crypto'
import type { Classifier } from '../../moderation'

/** How long a write check's verdict stands: a flood of health checks costs one small write a second at most. */
const WRITE_CHECK_TTL_MS = 1000

/**
 * Whether the database can be written right now, by writing: one row of `health_probe`, committed. A read-only file
 * or mount, a lock held by another process and a full disk all fail it (a read, or a transaction rolled back, would
 * pass). Returns the answer's error, or null when the write went through.
 */
function writeCheck(db: Db) {
  let checked = { at: -Infinity, failure: null as HttpError | null }
  return () => {
    const now = Date.now()
    if (now - checked.at < WRITE_CHECK_TTL_MS) return checked.failure
    let failure: HttpError | null = null
    try {
      db.insert(healthProbe)
        .values({ id: 1, checkedAt: new Date(now) })
        .onConflictDoUpdate({ target: healthProbe.id, set: { checkedAt: new Date(now) } })
        .run()
    } catch (error) {
      failure = faultAnswer(error) ?? new HttpError(503, 'Database unavailable')
    }
    checked = { at: now, failure }
    return failure
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
        if (!failure) return { status: 'ok' as const }
        // A 507 (disk full) is a 503 here: the service is unavailable, whatever the cause, and says which.
        set.status = 503
        Object.assign(set.headers, failure.headers)
        return { error: failure.message } as never
      },
      {
        response: { 200: t.Object({ status: t.Literal('ok') }), ...errors(503) },
        detail: { tags: ['Operations'], summary: 'Liveness: the database answers and can be written (checked at most once a second)' },
      },
    )
    .get(
      '/metrics',
      ({ headers, set }) => {
        if (!deps.metricsToken) throw notFound()
        const given = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1] ?? ''
        if (!safeEqual(given, deps.metricsToken)) throw unauthorized('Missing or wrong metrics token')
        const storageUsedBytes = db.select({ n: sql<number>`coalesce(sum(${images.size}), 0)` }).from(images).get()?.n ?? 0
        set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
        return deps.metrics.render({ storageUsedBytes, queueDepth: deps.classifier.queueDepth })
      },
      { detail: { hide: true } },
    )
}
