import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { ChangeFeed } from '../../db/changes'
import type { Db } from '../../db/client'
import { notFound, PoolBusy, Unprocessable } from '../../errors'
import { randomToken } from '../../lib/crypto'
import { log } from '../../log'
import type { Media, VariantSpec } from '../../media'
import { MediaError } from '../../media/errors'
import { type Storage, type StorageKey, variantKey } from '../../storage'
import { OriginalMissingError, withLocalOriginal } from '../../storage/local-copy'
import { PoolBusyError } from '../../workers/pool'
import type { ImageEvents } from '../images/events'
import { createRefusals } from './refusals'
import {
  forgetVariant,
  isStored,
  leastRecentlyUsed,
  recordVariant,
  storedBytes,
  variantsOf,
  writeUses,
} from './repository'
import { signedVariantPath, verifyVariantQuery } from './signing'
import { variantName } from './specs'

/** Rows read per step of an eviction. */
const EVICT_BATCH = 100

/** What the service needs of an image to decide on and make its sizes. */
export interface VariantImage {
  id: string
  ext: string
  mime: string
  width: number
  height: number
  frames: number
  filterPasses: number
}

export type VariantService = ReturnType<typeof createVariantService>

/**
 * An image's resized copies: made on first request by the media pool from the stored original, stored under their
 * own key, served from storage afterwards. Each is made once however many requests ask for it at the same time
 * (single flight). Stored variants are held to `storageLimit` bytes, least recently used going first; last uses are
 * kept in memory and written before an eviction reads them (a write per cached request would cost more than the
 * answer).
 *
 * Work is paid once: a size predicted past the media budget from the image's row (src/media/work.ts) is refused
 * without a job, and a size whose job failed (undecodable, past a budget) is remembered in the database with its
 * reason, so every instance answers it at once (422) and never runs the job again; the failure counts against the
 * refused-uploads windows of the image's sender (`chargeSender`).
 */
export function createVariantService(deps: {
  db: Db
  storage: Storage
  media: Media
  tmpDir: string
  secret: string
  storageLimit: number
  /** The pixel limit, which sets the budget of a size's work (src/media/work.ts). */
  maxPixels: number
  /** Counts a size that could not be made against the refused-uploads windows of the image's sender. */
  chargeSender(imageId: string): Promise<void>
  /** Variants removed by any instance (PostgreSQL: its eviction), so this one stops counting them as stored. */
  changes?: ChangeFeed
  now?: () => number
}) {
  const { db, storage, media, tmpDir } = deps
  const now = deps.now ?? Date.now
  const making = new Map<StorageKey, Promise<void>>()
  const uses = new Map<StorageKey, number>()
  const { refusal, failed, forget } = createRefusals(deps)
  // Keys known to be stored, so a cached request asks no SQL (it cost ~20x the rest of the answer). Rows leave only
  // through `removeStored` (here, or on PostgreSQL in another instance, which the change feed tells), or (the orphan
  // sweep, `cli check`) with their image, which /cdn no longer finds.
  const known = new Set<StorageKey>()
  /** Moved by every removal: a lookup that saw it move does not add its key to `known` (it may have gone meanwhile). */
  let removals = 0
  deps.changes?.on('variants', (key) => {
    removals++
    if (key === null) known.clear()
    else known.delete(key as StorageKey)
  })

  async function flushUses() {
    if (uses.size === 0) return
    const written = new Map(uses)
    await writeUses(db, written)
    // Uses noted while the write ran stay for the next flush.
    for (const [key, at] of written) if (uses.get(key) === at) uses.delete(key)
  }

  async function removeStored(key: StorageKey) {
    uses.delete(key)
    known.delete(key)
    removals++
    if (!(await forgetVariant(db, key))) return
    // The row is gone first: a store that fails leaves an orphan file, which the orphan sweep removes.
    await storage
      .delete(key)
      .catch((error) => log.warn('variant file left for the sweep', { key, error: String(error) }))
  }

  /** Least recently used first, until the stored variants fit the budget again; `keep` (just made) stays. */
  async function evict(keep: StorageKey) {
    await flushUses()
    let total = await storedBytes(db)
    while (total > deps.storageLimit) {
      const batch = (await leastRecentlyUsed(db, EVICT_BATCH)).filter((row) => row.key !== keep)
      if (batch.length === 0) return
      for (const row of batch) {
        if (total <= deps.storageLimit) return
        await removeStored(row.key)
        total -= row.bytes
      }
    }
  }

  /** Runs the job; what the original causes is a 422 (remembered), a full queue a 503 (tried again later). */
  async function render(image: VariantImage, spec: VariantSpec, key: StorageKey, target: string, owner: string) {
    try {
      await withLocalOriginal(storage, tmpDir, image, (source) => media.variant(source, spec, target, owner))
    } catch (error) {
      // Gone meanwhile (deleted) or lost: nothing to make it from.
      if (error instanceof OriginalMissingError) throw notFound()
      if (error instanceof MediaError) throw await failed(image, key, error)
      if (error instanceof PoolBusyError) throw new PoolBusy()
      throw error
    }
  }

  async function make(image: VariantImage, spec: VariantSpec, key: StorageKey, owner: string) {
    mkdirSync(tmpDir, { recursive: true })
    const target = join(tmpDir, `variant-${randomToken(9)}.${spec.format}`)
    try {
      await render(image, spec, key, target, owner)
      // A file without a row (a crash before the insert) is an orphan: replaced here, or removed by the sweep.
      await storage.put(key, target, { replace: true })
      // An image deleted while this ran leaves a row of a missing image: the orphan sweep drops it and its file.
      await recordVariant(db, { key, imageId: image.id, bytes: Bun.file(target).size, at: now() })
      known.add(key)
    } finally {
      await rm(target, { force: true })
    }
    await evict(key)
  }

  /** Removes every variant of an image (it was deleted or expired); its failures' rows go with its row. */
  async function removeFor(imageId: string) {
    forget(imageId)
    for (const { key } of await variantsOf(db, imageId)) await removeStored(key)
  }

  return {
    keyOf: (imageId: string, spec: VariantSpec) => variantKey(variantName(imageId, spec), spec.format),

    /**
     * Whether the variant is stored (and then counts as used now): at once for a key known to be stored, a promise
     * when the database is asked.
     */
    stored(key: StorageKey): boolean | Promise<boolean> {
      if (known.has(key)) {
        uses.set(key, now())
        return true
      }
      const started = removals
      return isStored(db, key).then((stored) => {
        if (!stored) return false
        if (removals === started) known.add(key)
        uses.set(key, now())
        return true
      })
    },

    refusal,

    /**
     * Makes and stores the variant unless a request for it is already making it (then waits for that one); a size that
     * will not be made (`refusal`) is a 422 with the reason, without a job. `starting` runs only when this call starts
     * the job (the per-IP cap counts variants made, not requests); `owner` is whose turn the job takes in the pool.
     */
    async ensure(image: VariantImage, spec: VariantSpec, key: StorageKey, opts: { owner: string; starting?(): void }) {
      const running = making.get(key)
      if (running) return running
      const refused = await refusal(image, spec, key)
      if (refused) throw new Unprocessable(refused)
      // Another request may have started it while the database was asked.
      const started = making.get(key)
      if (started) return started
      opts.starting?.()
      const job = make(image, spec, key, opts.owner).finally(() => making.delete(key))
      making.set(key, job)
      return job
    },

    /** The signed path (from /cdn on) of a custom size. */
    signedPath: (imageId: string, spec: VariantSpec) => signedVariantPath(deps.secret, imageId, spec),
    /** The spec of a signed URL's query for `file`; Forbidden unless this server signed exactly that. */
    verify: (file: string, format: VariantSpec['format'], search: string) =>
      verifyVariantQuery(deps.secret, file, format, search),

    /** Hook for the image events: an image's removal takes its variants with it. */
    events: {
      emit(type, image) {
        if (type !== 'image.deleted') return
        // emit must not wait or throw: a failure leaves rows and files to the orphan sweep.
        removeFor(image.id).catch((error) =>
          log.warn('variants left for the sweep', { id: image.id, error: String(error) }),
        )
      },
    } satisfies ImageEvents,

    flushUses,
  }
}
