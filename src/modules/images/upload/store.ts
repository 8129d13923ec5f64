import { StorageUnwritable } from '../../../errors'
import { faultOf } from '../../../faults'
import { newPublicId } from '../../../lib/crypto'
import { log } from '../../../log'
import { FORMATS } from '../../../media/formats'
import { originalKey, StorageKeyTakenError, thumbnailKey } from '../../../storage'
import type { Inspected } from './inspect'
import type { UploadSession } from './session'

/**
 * Step 4, store: each image's original and thumbnail to the store under a fresh id, as the session's own keys. Files
 * first, row second: a crash before the commit leaves files without a row, never a row without bytes, and the intent
 * recorded before them tells the next start which files those are (intents.ts).
 */

/** Fresh ids tried for one image when its id is already taken (1 in 62^8 per stored image: more is never needed). */
const ID_ATTEMPTS = 5

/** Stores the batch, one image after the other; returns each image's id. */
export async function store(session: UploadSession, inspected: Inspected[]): Promise<string[]> {
  const ids: string[] = []
  for (const image of inspected) ids.push(await storeImage(session, image))
  return ids
}

/** Stores an image under a fresh id; an id already in use (a collision) makes way for another. */
async function storeImage(session: UploadSession, image: Inspected): Promise<string> {
  const ext = FORMATS[image.info.format].ext
  for (let attempt = 1; ; attempt++) {
    const id = newPublicId()
    try {
      await session.intend(id, ext)
      await session.put(originalKey(id, ext), image.file.path)
      await session.put(thumbnailKey(id), image.thumbPath)
      return id
    } catch (error) {
      if (!(error instanceof StorageKeyTakenError) || attempt >= ID_ATTEMPTS) throw storageFailure(error)
      // Only the thumbnail's name was taken: the original this attempt stored goes before the next id.
      await session.remove(originalKey(id, ext))
    }
  }
}

/** The error for a put that failed: a full or unwritable disk (507), an object store that is down (503). */
function storageFailure(error: unknown) {
  // A fault of the disk or the object store goes on as it is: the error model answers (and logs) it.
  if (faultOf(error)) return error
  log.warn('upload: storing files failed', { error: String(error) })
  return new StorageUnwritable()
}
