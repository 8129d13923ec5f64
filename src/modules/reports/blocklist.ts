import type { Db } from '../../db/client'
import { badRequest } from '../../errors'
import { anyBlocked } from './repository'

export const BLOCKED_MESSAGE = 'This image was removed after an abuse report and cannot be uploaded again'

/** Refuses an upload carrying bytes that were removed after a report (by the SHA-256 of the bytes as received). */
export function refuseBlocked(db: Db, sha256s: string[]) {
  if (sha256s.length === 0) return
  if (anyBlocked(db, sha256s)) throw badRequest(BLOCKED_MESSAGE)
}
