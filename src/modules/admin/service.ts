import { count, desc, eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { images, users } from '../../db/schema'
import { notFound } from '../../errors'
import { publicUser } from '../auth/service'
import type { ImageService } from '../images/service'

export type AdminService = ReturnType<typeof createAdminService>

const ownedByUser = sql`${images}.${sql.identifier(images.userId.name)} = ${users}.${sql.identifier(users.id.name)}`
const expiresAt = sql`${images}.${sql.identifier(images.expiresAt.name)}`
/** The user's live images: expired ones stop counting at once, as in /api/v1/me. */
const liveOwned = (now: number) => sql`${ownedByUser} and (${expiresAt} is null or ${expiresAt} > ${now})`

export function createAdminService({ db, images: imageService }: { db: Db; images: ImageService }) {
  return {
    listUsers(opts: { page: number; limit: number; q?: string }) {
      const pattern = opts.q ? `%${opts.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null
      const filter = pattern
        ? sql`(lower(${users.username}) LIKE ${pattern} ESCAPE '\\' OR lower(${users.email}) LIKE ${pattern} ESCAPE '\\')`
        : undefined
      const total = db.select({ n: count() }).from(users).where(filter).get()?.n ?? 0
      const now = Date.now()
      const rows = db
        .select({
          user: users,
          // Qualified by hand: drizzle renders columns inside sql`` unqualified, and a bare "id" in the subquery is images.id.
          totalImages: sql<number>`(select count(*) from ${images} where ${liveOwned(now)})`,
          storageUsed: sql<number>`(select coalesce(sum(${images}.${sql.identifier(images.size.name)}), 0) from ${images} where ${liveOwned(now)})`,
        })
        .from(users)
        .where(filter)
        .orderBy(desc(users.id))
        .limit(opts.limit)
        .offset((opts.page - 1) * opts.limit)
        .all()
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
      const updated = Object.keys(changes).length
        ? db.update(users).set(changes).where(eq(users.id, id)).returning().get()
        : db.select().from(users).where(eq(users.id, id)).get()
      if (!updated) throw notFound('User not found')
      return updated
    },
  }
}
