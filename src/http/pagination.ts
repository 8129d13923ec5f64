import { badRequest } from '../errors'

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw badRequest(`${name} must be a positive integer`)
  }
  return Number(raw)
}

/** Reads `page` and `limit` from a query: positive integers or 400; limit clamped to `maxLimit`. */
export function parsePage(query: { page?: string; limit?: string }, defaults: { limit: number; maxLimit: number }) {
  const page = positiveInt('page', query.page, 1)
  const limit = Math.min(positiveInt('limit', query.limit, defaults.limit), defaults.maxLimit)
  return { page, limit, offset: (page - 1) * limit }
}

export const pageCount = (total: number, limit: number) => Math.ceil(total / limit)
