import type { Db } from '../../db/client'
import { healthProbe } from '../../db/schema'

/** Every query of the health_probe table. */

/** Writes the probe's one row and commits it: what only a writable database can do. */
export async function writeProbe(db: Db, at: number) {
  await db
    .insert(healthProbe)
    .values({ id: 1, checkedAt: new Date(at) })
    .onConflictDoUpdate({ target: healthProbe.id, set: { checkedAt: new Date(at) } })
}
