import type { Image } from '../../../db/schema'
import { badRequest, PoolBusy } from '../../../errors'
import { ipKey } from '../../../http/client-ip'
import type { ReceivedFile } from '../../../http/multipart'
import { log } from '../../../log'
import type { ImageInfo, Media } from '../../../media'
import { MediaError } from '../../../media/errors'
import { type Classifier, isMature, type NsfwThresholds } from '../../../moderation'
import { withDeadline } from '../../../moderation/deadline'
import { PoolBusyError } from '../../../workers/pool'
import type { BlockService } from '../../blocks/service'
import type { UploadOptions } from './admit'
import type { UploadSession } from './session'

/**
 * Step 3, inspect: each file through one media job (detect, strip metadata, thumbnail, classifier input, perceptual
 * hash) in the worker pool, the classifier's verdict, then the blocked pictures. Facts only: nothing is stored yet.
 */

/** Images decoded at once per request: sharp already uses a core per image, and the machine has two. */
const PROCESS_CONCURRENCY = 2

export interface Inspected {
  file: ReceivedFile
  info: ImageInfo
  thumbPath: string
  size: number
  phash: string | null
  nsfw: boolean
  scanStatus: Image['scanStatus']
  /** Informational: the id of the same picture among the account's own live images. */
  duplicate: string | undefined
}

type Verdict = { nsfw: boolean; scanStatus: Image['scanStatus'] }

export interface InspectDeps {
  /** The id of a live image of the account with this perceptual hash, the oldest (repository's prepareOwnedImageWithPhash). */
  findOwnedPhash(values: { userId: number; phash: string; now: number }): Promise<string | undefined>
  media: Media
  classifier: Classifier
  thresholds: NsfwThresholds
  /** The pipeline's own deadline for one scan. */
  scanTimeoutMs: number
  blocks: Pick<BlockService, 'refusePictures'>
}

/** Inspects a batch, at most PROCESS_CONCURRENCY files at once; the first failure stops it and is thrown. */
export async function inspect(
  deps: InspectDeps,
  session: UploadSession,
  files: ReceivedFile[],
  userNsfw: boolean,
  opts: UploadOptions,
): Promise<Inspected[]> {
  const { policy, ip, scan } = opts
  // Whose turn the jobs take in the media pool: the account, else the address (src/workers/fair-queue.ts).
  const owner = policy.owner ? `user:${policy.owner.id}` : `ip:${ipKey(ip)}`
  const results: Omit<Inspected, 'duplicate'>[] = new Array(files.length)
  let next = 0
  let failure: Error | null = null
  const worker = async () => {
    while (failure === null && next < files.length) {
      const i = next++
      try {
        results[i] = await inspectFile(deps, session, files[i], userNsfw, scan, owner)
      } catch (error) {
        failure ??= error as Error
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(PROCESS_CONCURRENCY, files.length) }, worker))
  if (failure !== null) throw failure
  // By the decoded picture: resized, re-encoded, slightly cropped or brightened copies of a blocked one too.
  await deps.blocks.refusePictures(results.map((r) => r.phash))
  const inspected: Inspected[] = []
  for (const r of results)
    inspected.push({
      ...r,
      duplicate:
        policy.owner && r.phash
          ? await deps.findOwnedPhash({ userId: policy.owner.id, phash: r.phash, now: Date.now() })
          : undefined,
    })
  return inspected
}

async function inspectFile(
  deps: InspectDeps,
  session: UploadSession,
  file: ReceivedFile,
  userNsfw: boolean,
  scan: boolean,
  owner: string,
): Promise<Omit<Inspected, 'duplicate'>> {
  const thumbPath = session.temp(`${file.path}.thumb.webp`)
  try {
    // One job in a media worker, under its time and memory budget. A user's own nsfw=true stands without a scan;
    // otherwise the same decode feeds both the thumbnail and the classifier, whose scan starts as soon as its input
    // is cut and runs while the worker encodes the thumbnail. classify() never rejects.
    const scanned = scan && !userNsfw
    let scanning: Promise<Verdict> | undefined
    const { info, size, phash } = await deps.media.ingest(file.path, {
      thumbPath,
      owner,
      classifierInput: scanned
        ? (input) => {
            scanning = classify(deps, input)
          }
        : undefined,
    })
    file.size = size
    // A job that ended without handing over the input leaves the image pending, never unscanned.
    const verdict: Verdict = !scanned
      ? { nsfw: userNsfw, scanStatus: 'none' }
      : ((await scanning) ?? { nsfw: false, scanStatus: 'pending' })
    return { file, info, thumbPath, size, phash, ...verdict }
  } catch (error) {
    if (error instanceof MediaError) throw badRequest(`${file.filename}: ${error.message}`)
    if (error instanceof PoolBusyError) throw new PoolBusy()
    throw error
  }
}

/** A classifier failure never loses the upload: the image is kept out of public feeds until a rescan decides. */
async function classify(deps: InspectDeps, input: Uint8Array): Promise<Verdict> {
  try {
    // The pipeline's own deadline: no classifier (an injected one included) can hold an upload forever.
    const scores = await withDeadline(deps.classifier.classify(input), deps.scanTimeoutMs, 'nsfw scan')
    return { nsfw: isMature(scores, deps.thresholds), scanStatus: 'done' }
  } catch (error) {
    log.warn('nsfw scan failed; image pending', { error: String(error) })
    return { nsfw: false, scanStatus: 'pending' }
  }
}
