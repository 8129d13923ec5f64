import type { Db } from '../../db/client'
import { notFound } from '../../errors'
import { findUserById, updateUser, usersPage } from '../auth/repository'
import { publicUser } from '../auth/service'
import { liveTotalsOf } from '../images/repository'
import type { ImageService } from '../images/service'

export type AdminService = ReturnType<typeof createAdminService>

export function createAdminService({ db, images: imageService }: { db: Db; images: ImageService }) {
  return {
    listUsers(opts: { page: number; limit: number; q?: string }) {
      const now = Date.now()
      // The user's live images: expired ones stop counting at once, as in /api/v1/me.
      const { rows, total } = usersPage(
        db,
        { q: opts.q, limit: opts.limit, offset: (opts.page - 1) * opts.limit },
        (userId) => liveTotalsOf(userId, now),
      )
      return {
        users: rows.map((r) => ({
          ...publicUser(r.user),
          banned: r.user.banned,
          totalImages: r.totalImages,
          storageUsed: r.storageUsed,
        })),
        total,
      }
    },

    /** Removes any image, its files included. */
    async deleteImage(id: string) {
      const image = imageService.find(id)
      if (!image) throw notFound('Image not found')
      await imageService.remove(image)
    },

    updateUser(id: number, changes: { role?: 'user' | 'admin'; banned?: boolean; emailVerified?: boolean }) {
      const updated = Object.keys(changes).length ? updateUser(db, id, changes) : findUserById(db, id)
      if (!updated) throw notFound('User not found')
      return updated
    },
  }
}
