import type { Config } from '../../config'
import { type Db, run } from '../../db/client'
import type { Image, User } from '../../db/schema'
import { badRequest, notFound } from '../../errors'
import { FILENAME_MAX } from '../../http/multipart'
import { checkExpiryBound, expiryDate, parseExpiry } from './expiry'
import type { LinkBase } from './links'
import { IMAGE_SHAPES } from './model'
import { updateImage } from './repository'
import { imageFields, pickImage } from './view'

export interface ImageChanges {
  visibility?: string
  nsfw?: boolean
  expires?: string | number | null
  filename?: string
}

/**
 * Changes the owner's image. `expires`: seconds or an ISO 8601 duration from now, or null to never expire.
 * `filename`: the name shown for the image (titles, alt texts, search), within the bound of an uploaded file's name;
 * surrounding spaces dropped.
 */
export async function patchImage(
  deps: {
    db: Db
    config: Config
    base: LinkBase
    now: () => number
    findOwned: (user: User, id: string) => Promise<Image>
    changedHere: (id: string) => void
  },
  user: User,
  id: string,
  changes: ImageChanges,
) {
  if (
    changes.visibility === undefined &&
    changes.nsfw === undefined &&
    changes.expires === undefined &&
    changes.filename === undefined
  ) {
    throw badRequest('Supply visibility, nsfw, expires and/or filename')
  }
  if (changes.visibility !== undefined && changes.visibility !== 'public' && changes.visibility !== 'private') {
    throw badRequest('visibility must be "public" or "private"')
  }
  const filename = changes.filename?.trim()
  if (filename !== undefined && (filename.length === 0 || filename.length > FILENAME_MAX)) {
    throw badRequest(`filename must be 1 to ${FILENAME_MAX} characters`)
  }
  const expiresIn =
    changes.expires === undefined || changes.expires === null
      ? changes.expires
      : checkExpiryBound(parseExpiry(changes.expires), deps.config.expiry.maxSeconds)
  const image = await deps.findOwned(user, id)
  const set: Partial<Image> = {}
  if (changes.visibility !== undefined) set.visibility = changes.visibility as Image['visibility']
  if (changes.nsfw !== undefined) set.nsfw = changes.nsfw
  if (expiresIn !== undefined) set.expiresAt = expiryDate(expiresIn, deps.now())
  if (filename !== undefined) set.filename = filename
  const updated = await run(updateImage(deps.db, image.id, set))
  // Deleted between the lookup and the update (another request, the expiry sweep): gone, as a later PATCH finds it.
  if (!updated) throw notFound('Image not found')
  deps.changedHere(image.id)
  return { success: true as const, ...pickImage(imageFields(deps.base, updated), IMAGE_SHAPES.patched) }
}
