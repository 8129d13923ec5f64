import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { and, eq, inArray, lt, or } from 'drizzle-orm'
import { type Db, q, retryBusy, type Step, type Tx } from '../../../db/client'
import { uploadIntents } from '../../../db/schema'
import { newPublicId } from '../../../lib/crypto'
import { originalKey, type Storage, thumbnailKey } from '../../../storage'
import { imagesAmong } from '../repository'

/**
 * Upload intents: an image id an upload is about to store files under, recorded before the first byte is stored and
 * deleted in the commit's transaction. A process killed between the two (kill -9, a crash, a stop past Docker's
 * timeout) leaves the intent, and the next start removes its files at once instead of leaving them to the 24-hour
 * orphan sweep.
 */

/** Past this age an intent of any instance is dead: far longer than storing one image's two files ever takes. */
export const INTENT_GRACE_MS = 60 * 60_000

const INSTANCE_FILE = 'instance-id'

/**
 * Which data directory this process serves, kept in DATA_DIR/instance-id: one server per data directory (its lock), so
 * the intents a restart finds under its own id are its earlier life's, dead for sure, while another instance's on a
 * shared database may still be in progress.
 */
export function instanceId(dataDir: string): string {
  const path = join(dataDir, INSTANCE_FILE)
  if (existsSync(path)) return readFileSync(path, 'utf8').trim()
  const id = newPublicId() + newPublicId()
  writeFileSync(path, id, { mode: 0o600 })
  return id
}

/** Records that an upload is about to store the image `id` (its original under `ext`, and its thumbnail). */
export async function recordIntent(db: Db, intent: { id: string; ext: string; instance: string }) {
  // This process's clock, not the database's: the start sweep compares it with this process's start. Another process
  // holding the database's lock is waited for as the commit waits for it.
  await retryBusy(() => db.insert(uploadIntents).values({ ...intent, createdAt: new Date() }))
}

/** The intents of `ids` are done with (committed or cleaned up): returns the ids that still had one. */
export function* dropIntents(db: Db | Tx, ids: string[]): Step<string[]> {
  if (ids.length === 0) return []
  const rows = yield* q(
    db.delete(uploadIntents).where(inArray(uploadIntents.id, ids)).returning({ id: uploadIntents.id }),
  )
  return rows.map((row) => row.id)
}

/**
 * Removes the files of uploads that never committed: this instance's intents from before `startedAt` (its earlier
 * life), and any instance's older than INTENT_GRACE_MS (an instance that never came back). An id that has a row after
 * all (an id given up for a collision with a stored image) keeps its files. Returns how many images' files went.
 */
export async function sweepIntents(db: Db, storage: Storage, opts: { instance: string; startedAt: number }) {
  const deadWhere = or(
    and(eq(uploadIntents.instance, opts.instance), lt(uploadIntents.createdAt, new Date(opts.startedAt))),
    lt(uploadIntents.createdAt, new Date(opts.startedAt - INTENT_GRACE_MS)),
  )
  let removed = 0
  for (;;) {
    const dead = await db.select().from(uploadIntents).where(deadWhere).limit(SWEEP_BATCH)
    const kept = new Set(
      (
        await imagesAmong(
          db,
          dead.map((intent) => intent.id),
        )
      ).map((row) => row.id),
    )
    for (const intent of dead) {
      if (!kept.has(intent.id)) {
        await storage.delete(originalKey(intent.id, intent.ext))
        await storage.delete(thumbnailKey(intent.id))
        removed++
      }
      // Only once its files are gone: a sweep cut short finds the intent again next time.
      await db.delete(uploadIntents).where(eq(uploadIntents.id, intent.id))
    }
    if (dead.length < SWEEP_BATCH) return removed
  }
}

const SWEEP_BATCH = 500
