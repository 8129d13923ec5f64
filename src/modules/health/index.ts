import { Elysia, t } from 'elysia'
import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { errors } from '../../http/errors'

export function healthModule(db: Db) {
  return new Elysia({ name: 'module-health' }).get(
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
    { response: { 200: t.Object({ status: t.Literal('ok') }), ...errors(503) }, detail: { tags: ['Health'], summary: 'Liveness and database check' } },
  )
}
