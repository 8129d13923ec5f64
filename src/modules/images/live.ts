import { sql } from 'drizzle-orm'
import { images } from '../../db/schema'

/**
 * A stored image that is visible at all: not expired. Every read goes through this, so an image disappears everywhere
 * the moment it expires, before the sweeper removes its row and files.
 */
export const liveImage = (now = Date.now()) => sql`(${images.expiresAt} IS NULL OR ${images.expiresAt} > ${now})`
