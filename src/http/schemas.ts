import type { TSchema } from '@sinclair/typebox'
import { t } from 'elysia'

/** Common TypeBox pieces shared by several features. */
/** Numeric ids in paths (embed profiles, API keys, users, webhooks, reports): whole numbers SQLite can hold exactly. */
export const NumericId = (description?: string) =>
  t.Numeric({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, multipleOf: 1, ...(description ? { description } : {}) })
/** A schema or null. */
export const Nullable = <T extends TSchema>(s: T) => t.Union([s, t.Null()])
export const Timestamp = t.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' })
export const Visibility = t.Union([t.Literal('public'), t.Literal('private')])
export const Success = t.Object({ success: t.Literal(true) })

/** `page`/`limit` as query strings; they must be positive integers (checked by the service for a clear message). */
export const PageQuery = t.Object({
  page: t.Optional(t.String({ description: 'Page number, default 1' })),
  limit: t.Optional(t.String({ description: 'Items per page' })),
})

/** The point a paged list is pinned to: an answer gives it, and the next pages ask with it so they do not shift. */
export const AsOf = t.Integer({
  minimum: 0,
  description:
    'Pins the list: pass it back as asOf with the next pages, and images uploaded meanwhile stay out of them (no image is skipped or repeated)',
})
export const AsOfQuery = t.Optional(
  t.String({
    description: 'The asOf of an earlier page: images uploaded since then are left out, so pages do not shift',
  }),
)
