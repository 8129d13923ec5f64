import { sql } from 'drizzle-orm'
import { images } from '../../db/schema'

/**
 * A stored image that is visible at all: not expired. Every read goes through this, so an image disappears everywhere
 * the moment it expires, before the sweeper removes its row and files.
 */
export const liveImage = (now = Date.now()) => sql`(${images.expiresAt} IS NULL OR ${images.expiresAt} > ${now})`

/** An image expired at `now` whose row the sweeper has not removed yet (through the partial indexes on expires_at). */
export const expiredImage = (now: number) => sql`(${images.expiresAt} IS NOT NULL AND ${images.expiresAt} <= ${now})`
