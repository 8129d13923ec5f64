import { databaseFault } from './db/errors'
import type { DomainError } from './errors'
import { storageFault } from './storage/faults'

/**
 * Faults of the server's disk, database or object store, not of the request, as the domain error they are; null for
 * anything else. Each sorts its own engine's faults (src/db/errors.ts, src/storage/faults.ts); this only asks both.
 */
export function faultOf(error: unknown): DomainError | null {
  const fault = databaseFault(error) ?? storageFault(error)
  if (fault) faultSeenAt = Date.now()
  return fault
}

/** When a fault was last seen (epoch ms, 0 for never): a health verdict given before it is out of date. */
let faultSeenAt = 0
export const lastFaultAt = () => faultSeenAt
