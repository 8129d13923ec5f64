import type { Config } from '../../config'
import { type ChangeFeed, changeKey } from '../../db/changes'
import { type Db, run, type Step, type Tx, transaction } from '../../db/client'
import type { Image, User } from '../../db/schema'
import { badRequest, notFound } from '../../errors'
import { FILENAME_MAX } from '../../http/multipart'
import { type ListPage, pageCount } from '../../http/pagination'
import { isCrawler } from '../../lib/crawlers'
import { safeEqual, sha256Hex } from '../../lib/crypto'
import { windowState } from '../../limits/windows'
import { log } from '../../log'
import { originalKey, type Storage, thumbnailKey } from '../../storage'
import { ownerTotals } from './counts'
import { type ImageEvents, noImageEvents } from './events'
import { checkExpiryBound, expiryDate, parseExpiry } from './expiry'
import { accountPolicy } from './limits'
import { deletePageUrl, imageLinks, type LinkBase } from './links'
import { type ListReads, listReads } from './list-reads'
import { createLiveImageCache, type LiveImage } from './live-cache'
import { IMAGE_SHAPES, isImageId, NAME_SCOPE } from './model'
import {
  deleteImage,
  dueToExpire,
  type ImageListFilter,
  type ImageListOrder,
  prepareAddViews,
  prepareFindLive,
  prepareFindLiveRow,
  updateImage,
} from './repository'
import { imageFields, pickImage } from './view'

export type ImageService = ReturnType<typeof createImageService>

/** Expired images removed per transaction by the sweeper: short writes, so uploads never wait long behind it. */
const SWEEP_CHUNK = 100

/**
 * `now`: the service's clock, which decides which images have expired (reads, the cache, the sweep, PATCH's new
 * expiry) and reads the upload window for usage; tests pass one they can move forward instead of waiting.
 */
export function createImageService(deps: {
  db: Db
  config: Config
  storage: Storage
  events?: ImageEvents
  /** Images changed (by this process, or by any instance on PostgreSQL), for the live-image cache. */
  changes: ChangeFeed
  /** Where owners' lists are read (images/reads.ts: a Worker on SQLite); the service's connection by default. */
  reads?: ListReads
  now?: () => number
}) {
  const { db, config, storage } = deps
  const now = deps.now ?? Date.now
  const reads = deps.reads ?? listReads(db)
  const events = deps.events ?? noImageEvents
  const base: LinkBase = { publicUrl: config.publicUrl, cdnBase: config.cdnUrl }
  const links = (image: Pick<Image, 'id' | 'ext'>) => imageLinks(base, image)
  /** Every field the API shows of an image; `views`: the count with those still buffered, where an answer has them. */
  const fields = (image: Image, views?: number) => imageFields(base, image, views)

  const findLive = prepareFindLive(db)

  /** Finds a live image by id; malformed ids are refused before any lookup. */
  async function find(id: string): Promise<Image | undefined> {
    if (!isImageId(id)) return undefined
    return await findLive({ id, now: now() })
  }

  // Only read on a cache miss (and by details() of an image the cache dropped).
  const findLiveRow = prepareFindLiveRow(db)

  // The feed tells the cache of every UPDATE and DELETE of an images row, whoever makes it (this service, the sweeper,
  // embeds, the rescanner, tests): on SQLite synchronously, inside the statement, before any other JavaScript runs; on
  // PostgreSQL by id, from every instance (its trigger leaves view counts out). Inserts need no telling: nothing caches a
  // miss. Malformed ids are refused before any lookup.
  const liveCache = createLiveImageCache(
    {
      lookup: async (id) => (isImageId(id) ? await findLiveRow({ id, now: now() }) : undefined),
      onChange: (listener) => deps.changes.on('images', listener),
      keyOf: (image) => changeKey(image.id, image.rowid),
    },
    undefined,
    now,
  )
  /** An images row this process changed: its cache entry goes at once (PostgreSQL: not a notice's round trip later). */
  const changedHere = (id: string) => deps.changes.changedHere('images', id)

  function detailsOf(image: LiveImage | undefined) {
    if (!image) throw notFound('Image not found')
    return pickImage(imageFields(base, image, image.views + (pendingViews.get(image.id) ?? 0)), IMAGE_SHAPES.details)
  }
  type ImageDetails = ReturnType<typeof detailsOf>

  /** Whether `token` is the image's delete token (compared by hash, in constant time). */
  const holdsDeleteToken = (image: Image, token: string | null) =>
    Boolean(image.deleteTokenHash && token && safeEqual(image.deleteTokenHash, sha256Hex(token)))

  async function findOwned(user: User, id: string): Promise<Image> {
    const image = await find(id)
    if (!image || image.userId !== user.id) throw notFound('Image not found')
    return image
  }

  async function removeFiles(image: Pick<Image, 'id' | 'ext'>) {
    // The row is already gone: a store that is down must not fail the delete. The files are orphans, which the
    // startup sweep (or `cli check --repair`) removes.
    await Promise.all([storage.delete(originalKey(image.id, image.ext)), storage.delete(thumbnailKey(image.id))]).catch(
      (error) =>
        log.warn('image files left for the sweep: storage unavailable', { id: image.id, error: String(error) }),
    )
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
    changedHere(image.id)
    pendingViews.delete(image.id)
    await removeFiles(image)
    // Every removal path (owner, delete token, admin, report action, expiry) ends here.
    if (deleted) events.emit('image.deleted', deleted)
  }

  /**
   * Removes expired images, rows and files, in chunks; returns how many went. Reads already hide them (liveImage),
   * so this only frees the space. One sweep at a time: a call while one runs waits for that one.
   */
  let sweeping: Promise<number> | null = null
  function sweepExpired(at = now()): Promise<number> {
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

  // Views are counted in memory and written in batches: an UPDATE per view would cut read throughput severalfold.
  const pendingViews = new Map<string, number>()
  /**
   * Rows per write: at a million images each is a random row and views-index entry (0.2-0.5 ms apiece, cold; 50 a
   * write held SQLite's event loop up to 24 ms).
   */
  const FLUSH_CHUNK = 20
  const addViews = prepareAddViews(db)
  // One write at a time: a flush that starts while another writes reads the counts that one left (never the same
  // counts twice).
  let writing: Promise<unknown> = Promise.resolve()
  /**
   * Writes the pending counts of `ids` in one transaction. Counts leave the buffer only once it has committed: a
   * failed write (a locked or read-only database) keeps them all for the next flush; views counted while it ran stay.
   */
  function writeViews(ids: string[]): Promise<void> {
    const run = writing.then(async () => {
      const batch: [string, number][] = []
      for (const id of ids) {
        const n = pendingViews.get(id)
        if (n) batch.push([id, n])
      }
      // The counts change nothing a cached entry shows but the count, which it adds below: hot images keep their
      // entries (and /cdn its ready answers) across flushes.
      await deps.changes.quietly('images', () => addViews(batch))
      // Committed: the written counts leave the buffer, and the cached entries count them too.
      for (const [id, n] of batch) {
        const left = (pendingViews.get(id) ?? 0) - n
        if (left > 0) pendingViews.set(id, left)
        else pendingViews.delete(id)
        liveCache.viewsWritten(id, n)
      }
    })
    writing = run.catch(() => {})
    return run
  }
  /** Writes every buffered count at once (shutdown, tests). */
  async function flushViews() {
    const ids = [...pendingViews.keys()]
    for (let i = 0; i < ids.length; i += FLUSH_CHUNK) await writeViews(ids.slice(i, i + FLUSH_CHUNK))
  }
  /**
   * The periodic flush: one chunk per event-loop turn, so a large batch never holds the loop longer than one short
   * transaction (at 1M images, 500 rows held it 80 ms, 100 rows 23 ms; bench/README.md).
   */
  async function flushViewsGradually() {
    const ids = [...pendingViews.keys()]
    for (let i = 0; i < ids.length; i += FLUSH_CHUNK) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve))
      await writeViews(ids.slice(i, i + FLUSH_CHUNK))
    }
  }

  return {
    links,
    find,
    findOwned,
    changedHere,
    removeFiles,
    remove,
    sweepExpired,
    /** The service's clock: reads at this time agree with the service on what has expired. */
    now,

    fields,

    /**
     * An upload answer's image: its delete page link for every upload, the bare token for anonymous ones, and
     * `duplicateOf`, the uploader's own live image with the same perceptual hash, when there is one.
     */
    uploadedView(image: Image, deleteToken: string, duplicateOf?: string) {
      return {
        ...pickImage(fields(image), IMAGE_SHAPES.uploaded),
        deletePage: deletePageUrl(config.publicUrl, image.id, deleteToken),
        ...(image.userId === null ? { deleteToken } : {}),
        ...(duplicateOf ? { duplicateOf } : {}),
      }
    },

    /**
     * What a delete page link opens: the live image its token may delete, `gone` when no live image has the id
     * (deleted, perhaps by this very link, or expired) and `wrong` when the token is not the image's.
     */
    async deletableBy(id: string, token: string): Promise<Image | 'gone' | 'wrong'> {
      const image = await find(id)
      if (!image) return 'gone'
      return holdsDeleteToken(image, token) ? image : 'wrong'
    },

    /** The live image with this id as /cdn serves it (and its rowid); malformed ids are refused before any lookup. */
    /** Live images by id, from memory when recently read (see live-cache.ts): the hot read routes look up here. */
    liveCache,

    /**
     * The metadata answer of a live image (GET /api/v1/image/:id); 404 for anything else. At once from a cached entry,
     * a promise when the database is asked: await it either way.
     */
    details(id: string): ImageDetails | Promise<ImageDetails> {
      const found = liveCache.get(id)
      return found instanceof Promise ? found.then(detailsOf) : detailsOf(found)
    },

    /**
     * `expires`: seconds or an ISO 8601 duration from now, or null to never expire. `filename`: the name shown for
     * the image (titles, alt texts, search), within the bound of an uploaded file's name; surrounding spaces dropped.
     */
    async patch(
      user: User,
      id: string,
      changes: { visibility?: string; nsfw?: boolean; expires?: string | number | null; filename?: string },
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
          : checkExpiryBound(parseExpiry(changes.expires), config.expiry.maxSeconds)
      const image = await findOwned(user, id)
      const set: Partial<Image> = {}
      if (changes.visibility !== undefined) set.visibility = changes.visibility as Image['visibility']
      if (changes.nsfw !== undefined) set.nsfw = changes.nsfw
      if (expiresIn !== undefined) set.expiresAt = expiryDate(expiresIn, now())
      if (filename !== undefined) set.filename = filename
      const updated = await run(updateImage(db, image.id, set))
      // Deleted between the lookup and the update (another request, the expiry sweep): gone, as a later PATCH finds it.
      if (!updated) throw notFound('Image not found')
      changedHere(image.id)
      return { success: true as const, ...pickImage(fields(updated), IMAGE_SHAPES.patched) }
    },

    /** Deletes by the owner's key, or by the upload's delete token; anything else is 404. */
    async deleteBy(caller: { user: User | null; deleteToken: string | null }, id: string) {
      const image = await find(id)
      const ownerMatches = image && caller.user && image.userId === caller.user.id
      if (!image || !(ownerMatches || holdsDeleteToken(image, caller.deleteToken))) throw notFound('Image not found')
      await remove(image)
    },

    /**
     * The caller's images, newest first unless `order` says otherwise, narrowed by a part of the filename (`filter.name`,
     * no longer than a filename can be) and, on the dashboard (JWT), by visibility and NSFW flag.
     */
    async list(
      user: User,
      page: ListPage,
      filter: ImageListFilter = {},
      order: ImageListOrder = { by: 'date', direction: 'desc' },
    ) {
      if (filter.name !== undefined && filter.name.length > FILENAME_MAX) {
        throw badRequest(`q must be at most ${FILENAME_MAX} characters`)
      }
      const { total, rows, asOf, capped } = await reads.owned(user.id, filter, order, page, now(), NAME_SCOPE)
      return {
        success: true as const,
        images: rows.map(({ image }) =>
          pickImage(fields(image, image.views + (pendingViews.get(image.id) ?? 0)), IMAGE_SHAPES.listItem),
        ),
        total,
        page: page.page,
        limit: page.limit,
        pages: pageCount(total, page.limit),
        asOf,
        ...(filter.name === undefined ? {} : { capped: capped ?? false }),
      }
    },

    async usage(user: User) {
      const policy = accountPolicy(config, user)
      const { used, totalImages, window } = await run(
        (function* () {
          const owned = yield* ownerTotals(db, user.id, now())
          const window = yield* windowState(db, policy.window, now())
          return { used: owned.bytes, totalImages: owned.images, window }
        })(),
      )
      return {
        success: true as const,
        username: user.username,
        email: user.email,
        role: user.role,
        emailVerified: user.emailVerified,
        totalImages,
        storage: {
          used,
          limit: policy.storageLimit,
          remaining: policy.storageLimit === null ? null : Math.max(0, policy.storageLimit - used),
        },
        limits: { maxFileSize: policy.maxFileSize, maxFilesPerUpload: policy.maxFiles },
        rateLimit: { window: '1 hour', ...window },
      }
    },

    /** Counts a view of the image, unless the User-Agent is a known unfurler or crawler (src/lib/crawlers.ts). */
    countView(id: string, userAgent: string | null = null) {
      if (isCrawler(userAgent)) return
      pendingViews.set(id, (pendingViews.get(id) ?? 0) + 1)
    },
    flushViews,
    flushViewsGradually,
  }
}
