import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import type { Config } from '../../config'
import { type Db, retryBusy, run, transaction } from '../../db/client'
import type { Image, User } from '../../db/schema'
import { badRequest, Invalid, PoolBusy, StorageUnwritable } from '../../errors'
import { faultOf } from '../../faults'
import { ipKey } from '../../http/client-ip'
import {
  discardFiles,
  type MultipartLimits,
  type ReceivedFile,
  tooManyFiles,
  type UploadSource,
} from '../../http/multipart'
import { newPublicId, randomToken, sha256Hex } from '../../lib/crypto'
import { consumeWindow } from '../../limits/windows'
import { log } from '../../log'
import type { ImageInfo, Media } from '../../media'
import { MediaError } from '../../media/errors'
import { FORMATS } from '../../media/formats'
import type { Classifier, NsfwThresholds } from '../../moderation'
import { isMature } from '../../moderation'
import { withDeadline } from '../../moderation/deadline'
import { fetchToFile } from '../../net/fetch-url'
import { originalKey, type Storage, type StorageKey, StorageKeyTakenError, thumbnailKey } from '../../storage'
import { PoolBusyError } from '../../workers/pool'
import { TITLE_MAX } from '../albums/model'
import { addToAlbum, resolveUploadAlbum } from '../albums/repository'
import type { BlockService } from '../blocks/service'
import { type ImageEvents, noImageEvents } from './events'
import { expiryDate, uploadExpiry } from './expiry'
import {
  type AdmittedUpload,
  accountPolicy,
  anonymousPolicy,
  checkQuota,
  createUploadAdmission,
  type UploadPolicy,
} from './limits'
import { insertImages, ownedImageWithPhash } from './repository'
import type { ImageService } from './service'

const TRUE_FORMS = new Set(['true', '1', 'yes', 'on'])
/** Images decoded at once per request: sharp already uses a core per image, and the machine has two. */
const PROCESS_CONCURRENCY = 2
/** Fresh ids tried for one image when its id is already taken (1 in 62^8 per stored image: more is never needed). */
const ID_ATTEMPTS = 5

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

interface Prepared {
  file: ReceivedFile
  info: ImageInfo
  thumbPath: string
  size: number
  phash: string | null
  nsfw: boolean
  scanStatus: Image['scanStatus']
}

type UploadedView = ReturnType<ImageService['uploadedView']>

/** The answer of every upload door (multipart or tus): one file a flat object, several `{ success, images }`. */
function uploadAnswer(views: UploadedView[]) {
  return views.length === 1 ? { success: true as const, ...views[0] } : { success: true as const, images: views }
}

export type UploadPipeline = ReturnType<typeof createUploadPipeline>

/** The one upload pipeline behind both upload endpoints; the caller's policy decides limits and scanning. */
export function createUploadPipeline(deps: {
  db: Db
  config: Config
  storage: Storage
  media: Media
  classifier: Classifier
  thresholds: NsfwThresholds
  /** Refuses blocked bytes and pictures. */
  blocks: Pick<BlockService, 'refuseBytes' | 'refusePictures'>
  /** Gives the answer's view of each stored image. */
  images: Pick<ImageService, 'uploadedView'>
  /** Counts every stored batch. */
  metrics?: { uploaded(count: number, bytes: number): void }
  /** Told of every stored image, after its row is committed. */
  events?: ImageEvents
  /** The service's clock, for the rate windows and the rows' times (tests step it). */
  now?: () => number
}) {
  const { db, config, storage, media, classifier } = deps
  const events = deps.events ?? noImageEvents
  const clock = deps.now ?? Date.now
  const { tmpDir } = config
  mkdirSync(tmpDir, { recursive: true })
  const admission = createUploadAdmission(db, config, clock)

  function readOptions(fields: Record<string, string>, policy: UploadPolicy) {
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

  /** `owner`: whose turn the job takes in the media pool (the account, else the address: src/workers/pool.ts). */
  async function prepare(file: ReceivedFile, userNsfw: boolean, scan: boolean, owner: string): Promise<Prepared> {
    const thumbPath = `${file.path}.thumb.webp`
    try {
      // One job in a media worker, under its time and memory budget. A user's own nsfw=true stands without a scan;
      // otherwise the same decode feeds both the thumbnail and the classifier, whose scan starts as soon as its input
      // is cut and runs while the worker encodes the thumbnail. classify() never rejects.
      const scanned = scan && !userNsfw
      let scanning: ReturnType<typeof classify> | undefined
      const { info, size, phash } = await media.ingest(file.path, {
        thumbPath,
        owner,
        classifierInput: scanned
          ? (input) => {
              scanning = classify(input)
            }
          : undefined,
      })
      file.size = size
      // A job that ended without handing over the input leaves the image pending, never unscanned.
      const verdict = !scanned
        ? { nsfw: userNsfw, scanStatus: 'none' as const }
        : ((await scanning) ?? { nsfw: false, scanStatus: 'pending' as const })
      return { file, info, thumbPath, size, phash, ...verdict }
    } catch (error) {
      if (error instanceof MediaError) throw badRequest(`${file.filename}: ${error.message}`)
      if (error instanceof PoolBusyError) throw new PoolBusy()
      throw error
    }
  }

  /** A classifier failure never loses the upload: the image is kept out of public feeds until a rescan decides. */
  async function classify(input: Uint8Array): Promise<{ nsfw: boolean; scanStatus: Image['scanStatus'] }> {
    try {
      // The pipeline's own deadline: no classifier (an injected one included) can hold an upload forever.
      const scores = await withDeadline(classifier.classify(input), config.nsfw.timeoutMs, 'nsfw scan')
      return { nsfw: isMature(scores, deps.thresholds), scanStatus: 'done' }
    } catch (error) {
      log.warn('nsfw scan failed; image pending', { error: String(error) })
      return { nsfw: false, scanStatus: 'pending' }
    }
  }

  async function prepareAll(files: ReceivedFile[], userNsfw: boolean, opts: UploadOptions) {
    const { policy, ip, scan } = opts
    const owner = policy.owner ? `user:${policy.owner.id}` : `ip:${ipKey(ip)}`
    const results: Prepared[] = new Array(files.length)
    let next = 0
    let failure: Error | null = null
    const worker = async () => {
      while (failure === null && next < files.length) {
        const i = next++
        try {
          results[i] = await prepare(files[i], userNsfw, scan, owner)
        } catch (error) {
          failure ??= error as Error
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(PROCESS_CONCURRENCY, files.length) }, worker))
    if (failure !== null) {
      await Promise.all(results.filter(Boolean).map((p) => rm(p.thumbPath, { force: true })))
      throw failure
    }
    return results
  }

  /** Stores `key` for this request; listed before the put, so a put that fails half-way (or whose answer was lost) is removed too. */
  async function putOwn(key: StorageKey, path: string, storedKeys: StorageKey[]) {
    storedKeys.push(key)
    try {
      await storage.put(key, path)
    } catch (error) {
      // Someone else's object: never ours to remove.
      if (error instanceof StorageKeyTakenError) storedKeys.pop()
      throw error
    }
  }

  /** Stores an image's original and thumbnail under a fresh id; an id already in use (a collision) makes way for another. */
  async function storeFiles(p: Prepared, storedKeys: StorageKey[]): Promise<string> {
    const ext = FORMATS[p.info.format].ext
    for (let attempt = 1; ; attempt++) {
      const id = newPublicId()
      try {
        await putOwn(originalKey(id, ext), p.file.path, storedKeys)
        await putOwn(thumbnailKey(id), p.thumbPath, storedKeys)
        return id
      } catch (error) {
        if (!(error instanceof StorageKeyTakenError) || attempt >= ID_ATTEMPTS) throw storageFailure(error)
        // Only the thumbnail's name was taken: the original this attempt stored goes before the next id.
        if (storedKeys.at(-1) === originalKey(id, ext)) await storage.delete(storedKeys.pop()!)
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

  /**
   * Files refused once processing began (every MediaError: not an image, undecodable, too many pixels, past a
   * budget, location not removable) and blocked files cost their sender: counted against the refused-uploads windows.
   * prepare() turns a MediaError into a 400 and lets everything else (our own failures) through as it is.
   */
  async function refusable<T>(opts: UploadOptions, work: () => T | Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof Invalid) await admission.refused(opts.policy, opts.ip)
      throw error
    }
  }

  /**
   * Validates, processes and stores files that have already been received (multipart parts or a finished tus upload),
   * for an upload that `admit` let in. All or nothing; the temp files are removed either way (what was stored has its
   * own copy or link). Returns the answer's body and the upload window it counted in.
   */
  async function store(
    files: ReceivedFile[],
    fields: Record<string, string>,
    opts: UploadOptions,
    admitted: AdmittedUpload,
  ) {
    const { policy } = opts
    const storedKeys: StorageKey[] = []
    try {
      const options = readOptions(fields, policy)
      if (files.length === 0) throw badRequest('No files: send one or more `file` fields')
      // By the hash of the bytes as sent (metadata stripping changes them later): what a re-upload sends again.
      await refusable(opts, () => deps.blocks.refuseBytes(files.map((f) => f.sha256)))
      // The real batch, beside what other admitted uploads hold: what cannot fit is refused before any decoding.
      await admitted.hold(
        files.length,
        files.reduce((sum, f) => sum + f.size, 0),
      )

      const prepared = await refusable(opts, async () => {
        const prepared = await prepareAll(files, options.nsfw, opts)
        // By the decoded picture: resized, re-encoded, slightly cropped or brightened copies of a blocked one too.
        await deps.blocks.refusePictures(prepared.map((p) => p.phash))
        return prepared
      })
      // Informational: the same picture already among the account's own live images.
      const duplicates: (string | undefined)[] = []
      for (const p of prepared)
        duplicates.push(
          policy.owner && p.phash ? await run(ownedImageWithPhash(db, policy.owner.id, p.phash)) : undefined,
        )
      // Files first, row second: a crash in between leaves orphan files (swept later), never a row without bytes.
      const ids: string[] = []
      for (const p of prepared) ids.push(await storeFiles(p, storedKeys))
      // Every upload gets a delete token (its delete page link carries it); only its hash is stored.
      const deleteTokens = prepared.map(() => randomToken(24))
      const now = clock()
      // Check and reserve in one transaction (writers take turns), so parallel batches can never overshoot a window or
      // quota. Another process holding the database's lock: tried again for about 2 s, waiting off the event loop.
      const { rows, window } = await retryBusy(() =>
        transaction(db, function* (tx) {
          yield* checkQuota(
            tx,
            policy,
            prepared.reduce((sum, p) => sum + p.size, 0),
          )
          const window = yield* consumeWindow(tx, policy.window, prepared.length, now)
          const albumId =
            options.album && policy.owner
              ? yield* resolveUploadAlbum(tx, policy.owner, options.album, options.visibility === 'public')
              : null
          const rows = yield* insertImages(
            tx,
            prepared.map((p, i) => ({
              id: ids[i],
              userId: policy.owner?.id ?? null,
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
              deleteTokenHash: sha256Hex(deleteTokens[i]),
              uploaderIp: opts.ip,
              expiresAt: expiryDate(options.expiresIn, now),
              // Distinct, increasing times keep a batch in upload order when listed newest first.
              createdAt: new Date((opts.uploadedAt ?? now) + i),
            })),
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
      admitted.committed()
      // After the commit, never before; listeners (webhooks) only queue work, they never hold the answer up.
      for (const row of rows) events.emit('image.uploaded', row)
      deps.metrics?.uploaded(
        rows.length,
        rows.reduce((sum, row) => sum + row.size, 0),
      )
      // Each image as the answer shows it (its delete page link included): the plain tokens exist only here.
      const views = rows.map((row, i) => deps.images.uploadedView(row, deleteTokens[i], duplicates[i]))
      return { body: uploadAnswer(views), views, window, rows }
    } catch (error) {
      // All or nothing: whatever this request already stored goes again.
      await Promise.all(storedKeys.map((key) => storage.delete(key).catch(() => {})))
      throw error
    } finally {
      await discardFiles(files)
      await Promise.all(files.map((f) => rm(`${f.path}.thumb.webp`, { force: true })))
    }
  }

  return {
    /**
     * Which limits and scan an upload gets, by its door and caller: the one choice every door (multipart, tus, ...)
     * makes. An admin's account has the admin limits.
     */
    optionsFor(endpoint: UploadEndpoint, caller: UploadCaller): UploadOptions {
      const { user, ip } = caller
      if (endpoint === 'api') {
        if (!user) throw new Error('API uploads need an account')
        return { policy: accountPolicy(config, user), scan: config.nsfw.scanApiUploads, ip }
      }
      return { policy: user ? accountPolicy(config, user) : anonymousPolicy(config, ip), scan: true, ip }
    },
    /**
     * The streamed entry: once the upload is let in, `receive` streams its files to temp files; then they are stored.
     * `choose` is the caller's options, or (for a door that names its caller in the body: Chevereto's `key` field) how
     * to decide them from the fields that come before the first file.
     */
    async upload(
      receive: UploadSource,
      choose: UploadOptions | ((fields: Record<string, string>) => UploadOptions | Promise<UploadOptions>),
    ) {
      // No refusal by the declared Content-Length: past the largest legal body it cannot tell a file too large (413)
      // from one file too many (400), which can come after any number of bytes. The stream decides, in arrival order,
      // having read at most maxFiles files of maxFileSize; a chunked body could skip such a check anyway.
      // A caller known up front is let in before a byte of the body is read; one named in the body (Chevereto's `key`
      // field) is looked up and let in before its first file is read (the source waits for its limits).
      let opts = typeof choose === 'function' ? null : choose
      let admitted = opts && (await admission.admit(opts.policy, opts.ip))
      try {
        const { files, fields } = await receive(async (early) => {
          if (!opts) {
            opts = await (choose as (fields: Record<string, string>) => UploadOptions | Promise<UploadOptions>)(early)
            admitted = await admission.admit(opts.policy, opts.ip)
          }
          return { tmpDir, maxFiles: opts.policy.maxFiles, maxFileSize: opts.policy.maxFileSize }
        })
        if (!opts || !admitted) throw new Error('upload: the source never asked for its limits')
        return await store(files, fields, opts, admitted)
      } finally {
        admitted?.release()
      }
    },
    /**
     * `receive` plus the files its `url` fields name, fetched (src/net/fetch-url.ts) once the upload is let in: counted
     * with the files against the per-upload count, each under the per-file limit, after the files in the answer.
     * All or nothing: one URL that fails refuses the upload, with no temp file left.
     */
    withUrls(receive: UploadSource): UploadSource {
      return async (limitsFor) => {
        let decided: MultipartLimits | undefined
        const received = await receive(async (fields) => {
          decided = await limitsFor(fields)
          return decided
        })
        const urls = received.values?.url ?? []
        if (urls.length === 0) return received
        // Asked for by every source before it answers (a body with no file included).
        const limits = decided!
        try {
          if (received.files.length + urls.length > limits.maxFiles) throw tooManyFiles(limits.maxFiles)
          const options = { tmpDir: limits.tmpDir, maxBytes: limits.maxFileSize, ...config.urlUploads }
          const results = await Promise.allSettled(urls.map((url) => fetchToFile(url, options)))
          const fetched = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
          const failure = results.find((r) => r.status === 'rejected')
          if (failure) {
            await discardFiles(fetched)
            throw failure.reason
          }
          return { ...received, files: [...received.files, ...fetched] }
        } catch (error) {
          await discardFiles(received.files)
          throw error
        }
      }
    },
    /** Lets an upload that arrives some other way (a tus PATCH) start, before its body is read; release it when done. */
    admit: (opts: UploadOptions) => admission.admit(opts.policy, opts.ip),
    /** Whether an upload of `bytes` could start now (a tus creation); holds nothing. */
    check: (opts: UploadOptions, bytes: number) => admission.check(opts.policy, opts.ip, bytes),
    /** The entry for files received some other way (a finished tus upload): same checks, same answer. */
    store,
    /** Checks upload fields (visibility, album, ...) without storing anything: 400 when the pipeline would refuse them. */
    checkFields(fields: Record<string, string>, policy: UploadPolicy) {
      readOptions(fields, policy)
    },
  }
}
