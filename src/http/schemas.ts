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

/**
 * A whole number of a query string (`page`, `limit`, `asOf`), published as an `integer` with its minimum
 * (src/http/openapi-document.ts `numberOf` reads `format: integer` on a string so) and read as the text a query carries:
 * digits only, by its pattern. The framework's own t.Integer would also take `2e1`, ` 2` or `0x10`; `minimum` is for
 * the document (no string check reads it). Anything else is a 400 naming the parameter.
 */
export const QueryInt = (name: string, minimum: 0 | 1, description: string) =>
  t.Optional(
    t.String({
      format: 'integer',
      pattern: minimum === 1 ? '^[1-9][0-9]*$' : '^[0-9]+$',
      minimum,
      description,
      error: `${name} must be ${minimum === 1 ? 'a positive integer' : 'a whole number, as a previous answer gave it'}`,
    }),
  )

/**
 * `page` and `limit` of a paged list, with the defaults `parsePage` reads it by (src/http/pagination.ts): `maxLimit` is
 * no schema bound, since a larger limit is clamped to it, not refused.
 */
export const pageQuery = (defaults: { limit: number; maxLimit: number }, items = 'Items') => ({
  page: QueryInt('page', 1, 'Page number, default 1'),
  limit: QueryInt(
    'limit',
    1,
    `${items} per page, default ${defaults.limit}, at most ${defaults.maxLimit} (larger values are clamped)`,
  ),
})

/** `page`/`limit` of the owners' and admins' lists. */
export const PageQuery = t.Object(pageQuery({ limit: 20, maxLimit: 100 }))

/** The point a paged list is pinned to: an answer gives it, and the next pages ask with it so they do not shift. */
export const AsOf = t.Integer({
  minimum: 0,
  description:
    'Pins the list: pass it back as asOf with the next pages, and images uploaded meanwhile stay out of them (no image is skipped or repeated)',
})
export const AsOfQuery = QueryInt(
  'asOf',
  0,
  'The asOf of an earlier page: images uploaded since then are left out, so pages do not shift',
)
