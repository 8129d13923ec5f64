import { Elysia, t } from 'elysia'
import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { images } from '../../db/schema'
import { errors, notFound, unauthorized } from '../../http/errors'
import type { Metrics } from '../../http/observability'
import { safeEqual } from '../../lib/crypto'
import type { Classifier } from '../../moderation'

/** Operator endpoints: liveness, and Prometheus metrics behind a bearer token (off when no token is set). */
export function healthModule(deps: { db: Db; metrics: Metrics; metricsToken: string; classifier: Classifier }) {
  const { db } = deps
  return new Elysia({ name: 'module-health' })
    .get(
      '/healthz',
      ({ set }) => {
        try {
          db.get(sql`select 1`)
          return { status: 'ok' as const }
        } catch {
          set.status = 503
          return { error: 'Database unavailable' } as never
        }
      },
      { response: { 200: t.Object({ status: t.Literal('ok') }), ...errors(503) }, detail: { tags: ['Operations'], summary: 'Liveness and database check' } },
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
