import type { Config } from '../../config'
import { type Db, run } from '../../db/client'
import type { User } from '../../db/schema'
import { badRequest } from '../../errors'
import { FILENAME_MAX } from '../../http/multipart'
import { type ListPage, pageCount } from '../../http/pagination'
import { windowState } from '../../limits/windows'
import { ownerTotals } from './counts'
import { accountPolicy } from './limits'
import type { LinkBase } from './links'
import type { ListReads } from './list-reads'
import { IMAGE_SHAPES, NAME_SCOPE } from './model'
import type { ImageListFilter, ImageListOrder } from './repository'
import { imageFields, pickImage } from './view'

/**
 * The caller's images, newest first unless `order` says otherwise, narrowed by a part of the filename (`filter.name`,
 * no longer than a filename can be) and, on the dashboard (JWT), by visibility and NSFW flag.
 */
export async function listOwned(
  deps: { reads: ListReads; base: LinkBase; now: () => number; pendingViews: (id: string) => number },
  user: User,
  page: ListPage,
  filter: ImageListFilter,
  order: ImageListOrder,
) {
  if (filter.name !== undefined && filter.name.length > FILENAME_MAX) {
    throw badRequest(`q must be at most ${FILENAME_MAX} characters`)
  }
  const { total, rows, asOf, capped } = await deps.reads.owned(user.id, filter, order, page, deps.now(), NAME_SCOPE)
  return {
    success: true as const,
    images: rows.map(({ image }) =>
      pickImage(imageFields(deps.base, image, image.views + deps.pendingViews(image.id)), IMAGE_SHAPES.listItem),
    ),
    total,
    page: page.page,
    limit: page.limit,
    pages: pageCount(total, page.limit),
    asOf,
    ...(filter.name === undefined ? {} : { capped: capped ?? false }),
  }
}

/** The account's storage, limits and upload window (GET /api/v1/me). */
export async function usageOf(deps: { db: Db; config: Config; now: () => number }, user: User) {
  const { db, now } = deps
  const policy = accountPolicy(deps.config, user)
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
}
