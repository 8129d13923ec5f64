import { and, count, desc, eq, sql } from 'drizzle-orm'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import { images, type Image, type User } from '../../db/schema'
import { badRequest, notFound } from '../../http/errors'
import { pageCount } from '../../http/pagination'
import { safeEqual, sha256Hex } from '../../lib/crypto'
import { iso } from '../../lib/time'
import { originalKey, thumbnailKey, type Storage } from '../../storage'
import { imageLinks, type LinkBase } from './links'
import { accountPolicy, storageUsed, windowState } from './limits'

const ID = /^[A-Za-z0-9]{8}$/

export const isImageId = (id: string) => ID.test(id)

/** A stored image that is visible at all: not expired. Every read goes through this. */
export const liveImage = (now = Date.now()) => sql`(${images.expiresAt} IS NULL OR ${images.expiresAt} > ${now})`

export type ImageService = ReturnType<typeof createImageService>

export function createImageService(deps: { db: Db; config: Config; storage: Storage }) {
  const { db, config, storage } = deps
  const base: LinkBase = { publicUrl: config.publicUrl, cdnBase: config.cdnUrl }
  const links = (image: Pick<Image, 'id' | 'ext'>) => imageLinks(base, image)

  /** Finds a live image by id; malformed ids are refused before any lookup. */
  function find(id: string): Image | undefined {
    if (!isImageId(id)) return undefined
    return db.select().from(images).where(and(eq(images.id, id), liveImage())).get()
  }

  function findOwned(user: User, id: string): Image {
    const image = find(id)
    if (!image || image.userId !== user.id) throw notFound('Image not found')
    return image
  }

  async function removeFiles(image: Pick<Image, 'id' | 'ext'>) {
    await Promise.all([storage.delete(originalKey(image.id, image.ext)), storage.delete(thumbnailKey(image.id))])
  }

  /** Row first, files second: a crash in between leaves only orphan files, which the startup sweep removes. */
  async function remove(image: Image) {
    db.delete(images).where(eq(images.id, image.id)).run()
    pendingViews.delete(image.id)
    await removeFiles(image)
  }

  // Views are counted in memory and written in batches: an UPDATE per view would cut read throughput severalfold.
  const pendingViews = new Map<string, number>()
  const FLUSH_CHUNK = 500
  function flushViews() {
    if (pendingViews.size === 0) return
    const batch = [...pendingViews]
    pendingViews.clear()
    const update = db.$client.prepare('UPDATE images SET views = views + ?1 WHERE id = ?2')
    // Chunks keep each write short, so a large batch never holds the event loop for long.
    for (let i = 0; i < batch.length; i += FLUSH_CHUNK) {
      db.$client.transaction(() => {
        for (const [id, n] of batch.slice(i, i + FLUSH_CHUNK)) update.run(n, id)
      })()
    }
  }

  return {
    links,
    find,
    findOwned,
    removeFiles,
    remove,

    uploadedView(image: Image, deleteToken?: string) {
      return {
        id: image.id,
        ...links(image),
        width: image.width,
        height: image.height,
        size: image.size,
        mime: image.mime,
        visibility: image.visibility,
        nsfw: image.nsfw,
        filename: image.filename,
        ...(deleteToken ? { deleteToken } : {}),
      }
    },

    details(id: string) {
      const image = find(id)
      if (!image) throw notFound('Image not found')
      const { delete: _delete, ...imageLinksOnly } = links(image)
      return {
        id: image.id,
        ...imageLinksOnly,
        width: image.width,
        height: image.height,
        size: image.size,
        mime: image.mime,
        views: image.views + (pendingViews.get(image.id) ?? 0),
        visibility: image.visibility,
        nsfw: image.nsfw,
        uploadedAt: iso(image.createdAt),
      }
    },

    patch(user: User, id: string, changes: { visibility?: string; nsfw?: boolean }) {
      if (changes.visibility === undefined && changes.nsfw === undefined) throw badRequest('Supply visibility and/or nsfw')
      if (changes.visibility !== undefined && changes.visibility !== 'public' && changes.visibility !== 'private') {
        throw badRequest('visibility must be "public" or "private"')
      }
      const image = findOwned(user, id)
      const set: Partial<Image> = {}
      if (changes.visibility !== undefined) set.visibility = changes.visibility as Image['visibility']
      if (changes.nsfw !== undefined) set.nsfw = changes.nsfw
      const updated = db.update(images).set(set).where(eq(images.id, image.id)).returning().get()
      return { success: true as const, id: updated.id, visibility: updated.visibility, nsfw: updated.nsfw }
    },

    /** Deletes by the owner's key, or by the delete token of an anonymous upload; anything else is 404. */
    async deleteBy(caller: { user: User | null; deleteToken: string | null }, id: string) {
      const image = find(id)
      const ownerMatches = image && caller.user && image.userId === caller.user.id
      const tokenMatches =
        image && image.deleteTokenHash && caller.deleteToken && safeEqual(image.deleteTokenHash, sha256Hex(caller.deleteToken))
      if (!image || !(ownerMatches || tokenMatches)) throw notFound('Image not found')
      await remove(image)
    },

    list(user: User, page: { page: number; limit: number; offset: number }) {
      const mine = and(eq(images.userId, user.id), liveImage())
      const total = db.select({ n: count() }).from(images).where(mine).get()?.n ?? 0
      const rows = db
        .select()
        .from(images)
        .where(mine)
        .orderBy(desc(images.createdAt), desc(sql`rowid`))
        .limit(page.limit)
        .offset(page.offset)
        .all()
      return {
        success: true as const,
        images: rows.map((image) => ({
          id: image.id,
          url: links(image).url,
          thumbnail: links(image).thumbnail,
          viewer: links(image).viewer,
          filename: image.filename,
          size: image.size,
          width: image.width,
          height: image.height,
          mime: image.mime,
          views: image.views + (pendingViews.get(image.id) ?? 0),
          visibility: image.visibility,
          nsfw: image.nsfw,
          created_at: iso(image.createdAt),
        })),
        total,
        page: page.page,
        limit: page.limit,
        pages: pageCount(total, page.limit),
      }
    },

    usage(user: User) {
      const policy = accountPolicy(config, user)
      const used = storageUsed(db, user.id)
      const totalImages = db.select({ n: count() }).from(images).where(and(eq(images.userId, user.id), liveImage())).get()?.n ?? 0
      const window = windowState(db, policy.window)
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

    countView(id: string) {
      pendingViews.set(id, (pendingViews.get(id) ?? 0) + 1)
    },
    flushViews,
  }
}
