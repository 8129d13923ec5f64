import { type Db, retryBusy, transaction } from '../../../db/client'
import { StorageUnavailable } from '../../../errors'
import { randomToken, sha256Hex } from '../../../lib/crypto'
import { consumeWindow } from '../../../limits/windows'
import { FORMATS } from '../../../media/formats'
import { addToAlbum, resolveUploadAlbum } from '../../albums/repository'
import { expiryDate } from '../expiry'
import { checkQuota } from '../limits'
import { insertImages } from '../repository'
import type { FieldOptions, UploadOptions } from './admit'
import type { Inspected } from './inspect'
import { dropIntents } from './intents'
import type { UploadSession } from './session'

/**
 * Step 5, commit: one transaction decides the quota and the upload window, once (writers take turns, so parallel
 * batches can never overshoot either, whatever the early refusals let through), inserts the rows and links the album.
 * Once it has committed, the session keeps what it stored.
 */

export interface Batch {
  opts: UploadOptions
  options: FieldOptions
  inspected: Inspected[]
  ids: string[]
  /** The service's clock (ms). */
  now: number
}

export async function commit(db: Db, session: UploadSession, batch: Batch) {
  const { opts, options, inspected, now } = batch
  const { policy } = opts
  // Every upload gets a delete token (its delete page link carries it); only its hash is stored.
  const deleteTokens = inspected.map(() => randomToken(24))
  // Another process holding the database's lock: tried again for about 2 s, waiting off the event loop.
  const { rows, window } = await retryBusy(() =>
    transaction(db, function* (tx) {
      yield* checkQuota(
        tx,
        policy,
        inspected.reduce((sum, p) => sum + p.size, 0),
      )
      const window = yield* consumeWindow(tx, policy.window, inspected.length, now)
      const albumId =
        options.album && policy.owner
          ? yield* resolveUploadAlbum(tx, policy.owner, options.album, options.visibility === 'public')
          : null
      // The intents go with the rows' insert: from now on the files are the rows'. One already gone was swept as a
      // dead upload's (its files with it): nothing is committed, and the client tries again.
      const dropped = new Set(yield* dropIntents(tx, session.intents()))
      if (!batch.ids.every((id) => dropped.has(id))) throw new StorageUnavailable()
      const rows = yield* insertImages(
        tx,
        inspected.map((p, i) => imageRow(batch, p, i, deleteTokens[i])),
      )
      if (albumId)
        yield* addToAlbum(
          tx,
          albumId,
          rows.map((r) => r.id),
          now,
        )
      return { rows, window }
    }),
  )
  session.committed()
  return { rows, window, deleteTokens }
}

/** The row of the batch's `i`th image. */
function imageRow(batch: Batch, p: Inspected, i: number, deleteToken: string) {
  const { opts, options, now } = batch
  return {
    id: batch.ids[i],
    userId: opts.policy.owner?.id ?? null,
    filename: p.file.filename,
    mime: FORMATS[p.info.format].mime,
    ext: FORMATS[p.info.format].ext,
    width: p.info.width,
    height: p.info.height,
    frames: p.info.frames,
    filterPasses: p.info.filterPasses,
    size: p.size,
    sha256: p.file.sha256,
    phash: p.phash,
    // Hashed here: a null hash (too plain) is final, the backfill has nothing to add.
    phashTried: true,
    visibility: options.visibility,
    nsfw: p.nsfw,
    scanStatus: p.scanStatus,
    deleteTokenHash: sha256Hex(deleteToken),
    uploaderIp: opts.ip,
    expiresAt: expiryDate(options.expiresIn, now),
    // Distinct, increasing times keep a batch in upload order when listed newest first.
    createdAt: new Date((opts.uploadedAt ?? now) + i),
  }
}
