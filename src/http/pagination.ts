import { badRequest } from '../errors'

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw badRequest(`${name} must be a positive integer`)
  }
  return Number(raw)
}

/** A page of a list: its number, its size, the rows before it, and the moment the list is pinned to (`asOf`). */
export interface ListPage {
  page: number
  limit: number
  offset: number
  /** Rows inserted after this point (an answer's `asOf`) are left out, so pages do not shift; unset: now. */
  asOf?: number
}

/**
 * Reads `page`, `limit` and `asOf` from a query: page and limit positive integers, asOf a whole number (as an answer
 * gave it), or 400; limit clamped to `maxLimit`.
 */
export function parsePage(
  query: { page?: string; limit?: string; asOf?: string },
  defaults: { limit: number; maxLimit: number },
): ListPage {
  const page = positiveInt('page', query.page, 1)
  const limit = Math.min(positiveInt('limit', query.limit, defaults.limit), defaults.maxLimit)
  if (
    query.asOf !== undefined &&
    query.asOf !== '' &&
    !(/^\d+$/.test(query.asOf) && Number.isSafeInteger(Number(query.asOf)))
  )
    throw badRequest('asOf must be a whole number, as a previous answer gave it')
  const asOf = query.asOf ? Number(query.asOf) : undefined
  return { page, limit, offset: (page - 1) * limit, asOf }
}

export const pageCount = (total: number, limit: number) => Math.ceil(total / limit)
