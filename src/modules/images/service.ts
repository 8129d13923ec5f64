import type { Config } from '../../config'
import { type ChangeFeed, changeKey } from '../../db/changes'
import type { Db } from '../../db/client'
import type { Image, User } from '../../db/schema'
import { notFound } from '../../errors'
import type { ListPage } from '../../http/pagination'
import { safeEqual, sha256Hex } from '../../lib/crypto'
import type { Storage } from '../../storage'
import { type ImageEvents, noImageEvents } from './events'
import { accountLimits } from './limits'
import { deletePageUrl, imageLinks, type LinkBase } from './links'
import { type ListReads, listReads } from './list-reads'
import { createLiveImageCache, type LiveImage } from './live-cache'
import { IMAGE_SHAPES, isImageId } from './model'
import { listOwned, usageOf } from './owner-reads'
import { type ImageChanges, patchImage } from './patch'
import { createRemoval } from './removal'
import { type ImageListFilter, type ImageListOrder, prepareFindLive, prepareFindLiveRow } from './repository'
import { imageFields, pickImage } from './view'
import { createViewCounter } from './views'

export type ImageService = ReturnType<typeof createImageService>

/**
 * `now`: the service's clock, which decides which images have expired (reads, the cache, the sweep, PATCH's new
 * expiry) and reads the upload window for usage; tests pass one they can move forward instead of waiting. Its use
 * cases beside it: views.ts (counting views), removal.ts (deletes and the expiry sweep), patch.ts, owner-reads.ts.
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
  const base: LinkBase = { publicUrl: config.site.publicUrl, cdnBase: config.site.cdnUrl }
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
  const viewCounts = createViewCounter({ db, changes: deps.changes, liveCache })
  const removal = createRemoval({ db, storage, events, now, changedHere, forgetViews: viewCounts.forget })

  function detailsOf(image: LiveImage | undefined) {
    if (!image) throw notFound('Image not found')
    return pickImage(imageFields(base, image, image.views + viewCounts.pending(image.id)), IMAGE_SHAPES.details)
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

  return {
    links,
    find,
    findOwned,
    changedHere,
    removeFiles: removal.removeFiles,
    remove: removal.remove,
    removeMany: removal.removeMany,
    sweepExpired: removal.sweepExpired,
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
        deletePage: deletePageUrl(config.site.publicUrl, image.id, deleteToken),
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

    patch: (user: User, id: string, changes: ImageChanges) =>
      patchImage({ db, config, base, now, findOwned, changedHere }, user, id, changes),

    /** Deletes by the owner's key, or by the upload's delete token; anything else is 404. */
    async deleteBy(caller: { user: User | null; deleteToken: string | null }, id: string) {
      const image = await find(id)
      const ownerMatches = image && caller.user && image.userId === caller.user.id
      if (!image || !(ownerMatches || holdsDeleteToken(image, caller.deleteToken))) throw notFound('Image not found')
      await removal.remove(image)
    },

    list: (
      user: User,
      page: ListPage,
      filter: ImageListFilter = {},
      order: ImageListOrder = { by: 'date', direction: 'desc' },
    ) => listOwned({ reads, base, now, pendingViews: viewCounts.pending }, user, page, filter, order),

    usage: (user: User) => usageOf({ db, config, now }, user),
    /** The account's storage limit and uploads per hour in force: its override or its tier's. */
    limitsOf: (user: User) => accountLimits(config, user),

    countView: viewCounts.countView,
    flushViews: viewCounts.flushViews,
    flushViewsGradually: viewCounts.flushViewsGradually,
  }
}
