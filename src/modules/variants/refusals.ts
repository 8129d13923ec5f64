import type { Db } from '../../db/client'
import { Unprocessable } from '../../errors'
import { log } from '../../log'
import type { VariantSpec } from '../../media'
import type { MediaError } from '../../media/errors'
import { tooCostly } from '../../media/work'
import type { StorageKey } from '../../storage'
import { failureOf, recordFailure } from './repository'
import type { VariantImage } from './service'
import { workFactsOf } from './specs'

/** Images whose failed sizes are remembered in memory (each also in the database, which any instance reads). */
const KNOWN_FAILURES = 10_000

/** The answer to a size whose job failed, with the job's reason. */
const couldNotMake = (reason: string) => `This size could not be made from the original: ${reason}`

/**
 * The sizes that will not be made: predicted past the media budget from the image's row, or failed once (remembered
 * here and in the database, which every instance reads).
 */
export function createRefusals(deps: { db: Db; maxPixels: number; chargeSender(imageId: string): Promise<void> }) {
  const { db } = deps
  /** Failed sizes seen by this instance, by image (so an image's go with it), oldest image first. */
  const failures = new Map<string, Map<StorageKey, string>>()
  const rememberFailure = (imageId: string, key: StorageKey, reason: string) => {
    const known = failures.get(imageId) ?? new Map<StorageKey, string>()
    failures.delete(imageId)
    if (failures.size >= KNOWN_FAILURES) failures.delete(failures.keys().next().value!)
    failures.set(imageId, known.set(key, reason))
  }

  /**
   * The job failed for a reason of the original's (a MediaError: undecodable, past a budget): remembered for every
   * instance and charged to the image's sender. Remembering is bookkeeping: a database that cannot take it still
   * answers the reason.
   */
  async function failed(image: VariantImage, key: StorageKey, error: MediaError): Promise<Unprocessable> {
    const reason = error.message
    rememberFailure(image.id, key, reason)
    try {
      await recordFailure(db, { key, imageId: image.id, reason })
      await deps.chargeSender(image.id)
    } catch (cause) {
      log.warn('variant failure not recorded', { key, error: String(cause) })
    }
    return new Unprocessable(couldNotMake(reason))
  }

  /**
   * Why `spec` of `image` will not be made: predicted past the budget from the row, or failed before (known here, else
   * asked of the database); null when it may be made.
   */
  function refusal(image: VariantImage, spec: VariantSpec, key: StorageKey): string | null | Promise<string | null> {
    const costly = tooCostly(workFactsOf(image), spec, deps.maxPixels)
    if (costly) return costly
    const known = failures.get(image.id)?.get(key)
    if (known) return couldNotMake(known)
    return failureOf(db, key).then((reason) => {
      if (!reason) return null
      rememberFailure(image.id, key, reason)
      return couldNotMake(reason)
    })
  }

  return {
    refusal,
    failed,
    /** Forgets an image's failures (it was removed; their rows go with its row). */
    forget: (imageId: string) => failures.delete(imageId),
  }
}
