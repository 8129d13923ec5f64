import type { Config } from '../../../config'
import type { Image, User } from '../../../db/schema'
import { badRequest, Invalid } from '../../../errors'
import type { ReceivedFile } from '../../../http/multipart'
import { TITLE_MAX } from '../../albums/model'
import type { BlockService } from '../../blocks/service'
import { uploadExpiry } from '../expiry'
import {
  type AdmittedUpload,
  accountPolicy,
  anonymousPolicy,
  type createUploadAdmission,
  type UploadPolicy,
} from '../limits'

/**
 * Step 1, admit: who may upload what, and the cheap refusals made before any decoding. The admission itself (the
 * in-flight caps, the refused-uploads windows, the window and quota beside what other uploads hold) is
 * `createUploadAdmission` in ../limits.ts; the commit step alone decides the window and the quota.
 */

export type UploadAdmission = ReturnType<typeof createUploadAdmission>

/** Which door an upload comes through: `api` (an API key) or `web` (the website: a JWT session or anonymous). */
export type UploadEndpoint = 'api' | 'web'

/** Who is uploading: the account (null: anonymous, web only) and the client IP. */
export interface UploadCaller {
  user: User | null
  ip: string
}

export interface UploadOptions {
  policy: UploadPolicy
  /** Scan with the classifier before answering (web uploads). */
  scan: boolean
  ip: string
  /** The rows' upload time (ms) instead of now: the folder import gives each file's modification time. */
  uploadedAt?: number
}

/** What the upload's fields ask for, once checked against its policy. */
export type FieldOptions = ReturnType<typeof readFields>

const TRUE_FORMS = new Set(['true', '1', 'yes', 'on'])

/**
 * Which limits and scan an upload gets, by its door and caller: the one choice every door (multipart, tus, ...) makes.
 * An admin's account has the admin limits.
 */
export function optionsFor(config: Config, endpoint: UploadEndpoint, caller: UploadCaller): UploadOptions {
  const { user, ip } = caller
  if (endpoint === 'api') {
    if (!user) throw new Error('API uploads need an account')
    return { policy: accountPolicy(config, user), scan: config.nsfw.scanApiUploads, ip }
  }
  return { policy: user ? accountPolicy(config, user) : anonymousPolicy(config, ip), scan: true, ip }
}

/** The upload's fields (visibility, album, nsfw, expiry) as options; 400 for what the policy does not allow. */
export function readFields(config: Config, fields: Record<string, string>, policy: UploadPolicy) {
  const visibility = fields.visibility
  if (visibility !== undefined && visibility !== 'public' && visibility !== 'private') {
    throw badRequest('visibility must be "public" or "private"')
  }
  const forcedPrivate = TRUE_FORMS.has((fields.private ?? '').trim().toLowerCase())
  const isPrivate = forcedPrivate || visibility === 'private' || (policy.owner?.privateAccount ?? false)
  const album = (fields.album ?? fields.folder ?? '').trim()
  if (album && !policy.owner) throw badRequest('Anonymous uploads cannot use albums or folders')
  if (album.length > TITLE_MAX) throw badRequest(`album/folder name must be at most ${TITLE_MAX} characters`)
  return {
    visibility: (isPrivate ? 'private' : 'public') as Image['visibility'],
    nsfw: TRUE_FORMS.has((fields.nsfw ?? '').trim().toLowerCase()),
    album: album || null,
    /** Seconds until the images expire, null: never. */
    expiresIn: uploadExpiry(fields.expires, config.expiry, !policy.owner),
  }
}

/**
 * Files refused once processing began (every MediaError: not an image, undecodable, too many pixels, past a budget,
 * location not removable) and blocked files cost their sender: counted against the refused-uploads windows. The
 * inspect step turns a MediaError into a 400 and lets everything else (our own failures) through as it is.
 */
export async function refusable<T>(
  admission: UploadAdmission,
  opts: UploadOptions,
  work: () => T | Promise<T>,
): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof Invalid) await admission.refused(opts.policy, opts.ip)
    throw error
  }
}

/**
 * The early refusals of a received batch, before any decoding: no file, blocked bytes, and the window and quota
 * pre-check of the real batch beside what other admitted uploads hold (429, 413). They only spare work: the commit
 * step decides.
 */
export async function earlyRefusals(
  deps: { admission: UploadAdmission; blocks: Pick<BlockService, 'refuseBytes'> },
  files: ReceivedFile[],
  opts: UploadOptions,
  admitted: AdmittedUpload,
) {
  if (files.length === 0) throw badRequest('No files: send one or more `file` fields')
  // By the hash of the bytes as sent (metadata stripping changes them later): what a re-upload sends again.
  await refusable(deps.admission, opts, () => deps.blocks.refuseBytes(files.map((f) => f.sha256)))
  await admitted.hold(
    files.length,
    files.reduce((sum, f) => sum + f.size, 0),
  )
}
