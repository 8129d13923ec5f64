import { inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { blockedHashes } from '../../db/schema'
import { badRequest } from '../../errors'

export const BLOCKED_MESSAGE = 'This image was removed after an abuse report and cannot be uploaded again'

/** Refuses an upload carrying bytes that were removed after a report (by the SHA-256 of the bytes as received). */
export function refuseBlocked(db: Db, sha256s: string[]) {
  if (sha256s.length === 0) return
  const hit = db
    .select({ sha256: blockedHashes.sha256 })
    .from(blockedHashes)
    .where(inArray(blockedHashes.sha256, sha256s))
    .get()
  if (hit) throw badRequest(BLOCKED_MESSAGE)
}
