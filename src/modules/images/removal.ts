import { type Db, type Step, type Tx, transaction } from '../../db/client'
import type { Image } from '../../db/schema'
import { log } from '../../log'
import { originalKey, type Storage, thumbnailKey } from '../../storage'
import type { ImageEvents } from './events'
import { deleteImage, deleteImages, dueToExpire } from './repository'

/**
 * Expired images read per query by the sweeper, each then removed in its own transaction: on SQLite a row's delete with
 * its triggers runs on the event loop (~1.6 ms at a million rows), and a sweep of many rows a transaction measured
 * 40 ms blocks there (bench/README.md, "Scale").
 */
const SWEEP_CHUNK = 100

/** Removing images: one at a time (owner, delete token, admin, report action) or every expired one (the sweep). */
export function createRemoval(deps: {
  db: Db
  storage: Storage
  events: ImageEvents
  now: () => number
  /** Tells the live-image cache at once that the row went. */
  changedHere: (id: string) => void
  /** Drops the image's unwritten views. */
  forgetViews: (id: string) => void
}) {
  const { db, storage } = deps

  async function removeFiles(image: Pick<Image, 'id' | 'ext'>) {
    // The row is already gone: a store that is down must not fail the delete. The files are orphans, which the
    // startup sweep (or `cli check --repair`) removes.
    await Promise.all([storage.delete(originalKey(image.id, image.ext)), storage.delete(thumbnailKey(image.id))]).catch(
      (error) =>
        log.warn('image files left for the sweep: storage unavailable', { id: image.id, error: String(error) }),
    )
  }

  /** What follows the rows' deletion: the caches told, unwritten views dropped, the files removed, the events sent. */
  async function gone(removed: Pick<Image, 'id' | 'ext'>[], deleted: Image[]) {
    for (const image of removed) {
      deps.changedHere(image.id)
      deps.forgetViews(image.id)
    }
    for (const image of removed) await removeFiles(image)
    // Every removal path (owner, delete token, admin, report action, expiry) ends here.
    for (const image of deleted) deps.events.emit('image.deleted', image)
  }

  /**
   * Row first, files second: a crash in between leaves only orphan files, which the startup sweep removes.
   * `within` runs in the transaction that deletes the row (other writes that must happen with the removal, or not at all).
   */
  async function remove(image: Pick<Image, 'id' | 'ext'>, within?: (tx: Tx) => Step<unknown>) {
    const deleted = await transaction(db, function* (tx) {
      if (within) yield* within(tx)
      return yield* deleteImage(tx, image.id)
    })
    await gone([image], deleted ? [deleted] : [])
  }

  /**
   * Several images (a deleted account's), their rows in one transaction (one round trip on PostgreSQL,
   * not one a row), then their files; returns how many rows went.
   */
  async function removeMany(due: Pick<Image, 'id' | 'ext'>[]) {
    const ids = due.map((image) => image.id)
    const deleted = await transaction(db, (tx) => deleteImages(tx, ids))
    await gone(due, deleted)
    return deleted.length
  }

  /**
   * Removes expired images, rows and files, in chunks; returns how many went. Reads already hide them (liveImage),
   * so this only frees the space. One sweep at a time: a call while one runs waits for that one.
   */
  let sweeping: Promise<number> | null = null
  function sweepExpired(at = deps.now()): Promise<number> {
    sweeping ??= (async () => {
      let removed = 0
      for (;;) {
        const due = await dueToExpire(db, at, SWEEP_CHUNK)
        for (const image of due) {
          await remove(image)
          removed++
        }
        if (due.length < SWEEP_CHUNK) return removed
      }
    })().finally(() => {
      sweeping = null
    })
    return sweeping
  }

  return { removeFiles, remove, removeMany, sweepExpired }
}
