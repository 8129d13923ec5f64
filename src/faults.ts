import { databaseFault } from './db/errors'
import type { DomainError } from './errors'
import { log } from './log'
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

/**
 * Test only: the named point where IMGHOST_FAULT_POINT makes the process stop still (an upload's files stored, its row
 * not yet written), after saying so on the log, so a test can kill -9 it there and check what a restart makes of it.
 * Unset (always, in service) it costs one comparison.
 */
const stopAt = process.env.IMGHOST_FAULT_POINT ?? ''
export async function faultPoint(name: 'upload-stored') {
  if (stopAt !== name) return
  log.warn('fault point reached', { point: name })
  await new Promise(() => {})
}
