import { type Db, run } from '../../db/client'
import type { Invite, User } from '../../db/schema'
import { notFound } from '../../errors'
import { randomAlphanumeric } from '../../lib/crypto'
import { iso } from '../../lib/time'
import type { AccountLeave } from '../auth/leave'
import { allInvites, deleteInvite, findUserById, insertInvite, updateUser, usersPage } from '../auth/repository'
import { type AuthService, publicUser } from '../auth/service'
import { liveTotalsOf, ownerTotals } from '../images/counts'
import type { ImageService } from '../images/service'

const INVITE_CODE_LENGTH = 24

export type AdminService = ReturnType<typeof createAdminService>

/** What an admin may change on an account; a limit override of null goes back to the tier's. */
export interface UserChanges {
  role?: 'user' | 'admin'
  banned?: boolean
  emailVerified?: boolean
  storageLimit?: number | null
  uploadsPerHour?: number | null
}

export function createAdminService({
  db,
  images: imageService,
  auth,
  leave,
  publicUrl,
  now = Date.now,
}: {
  db: Db
  images: ImageService
  auth: AuthService
  /** Deleting accounts (the one use case, shared with DELETE /api/account). */
  leave: AccountLeave
  publicUrl: string
  /** The invites' clock (tests step it). */
  now?: () => number
}) {
  const publicInvite = (invite: Invite) => ({
    id: invite.id,
    code: invite.code,
    /** The register page with the code filled in. */
    url: `${publicUrl}/register?invite=${invite.code}`,
    uses: invite.maxUses,
    used: invite.used,
    expiresAt: invite.expiresAt ? iso(invite.expiresAt) : null,
    createdAt: iso(invite.createdAt),
  })

  /** An account with its totals, its limit overrides (null: none) and the limits in force. */
  const adminUser = (user: User, totals: { totalImages: number; storageUsed: number }) => ({
    ...publicUser(user),
    banned: user.banned,
    totalImages: totals.totalImages,
    storageUsed: totals.storageUsed,
    storageLimit: user.storageLimit,
    uploadsPerHour: user.uploadsPerHour,
    effective: imageService.limitsOf(user),
  })

  return {
    async listUsers(opts: { page: number; limit: number; q?: string }) {
      const now = imageService.now()
      // The user's live images: expired ones stop counting at once, as in /api/v1/me.
      const { rows, total } = await usersPage(
        db,
        { q: opts.q, limit: opts.limit, offset: (opts.page - 1) * opts.limit },
        (userId) => liveTotalsOf(userId, now),
      )
      return { users: rows.map((r) => adminUser(r.user, r)), total }
    },

    /** Removes any image, its files included. */
    async deleteImage(id: string) {
      const image = await imageService.find(id)
      if (!image) throw notFound('Image not found')
      await imageService.remove(image)
    },

    /**
     * A ban also ends every session of the account: lifting it later does not bring them back. Limit overrides
     * (null: back to the tier's) apply from the next request on, on every instance: nothing caches an account.
     */
    async updateUser(id: number, changes: UserChanges) {
      const updated = await run(Object.keys(changes).length ? updateUser(db, id, changes) : findUserById(db, id))
      if (!updated) throw notFound('User not found')
      if (changes.banned) await auth.endAllSessions(id)
      return updated
    },

    /** The account as the admin list shows it, with its live totals (the PATCH's answer). */
    async describeUser(user: User) {
      const totals = await run(ownerTotals(db, user.id, imageService.now()))
      return adminUser(user, { totalImages: totals.images, storageUsed: totals.bytes })
    },

    /** Deletes another account with everything it made (as its holder's own deletion does). */
    deleteUser: (admin: User, userId: number) => leave.removeByAdmin(admin, userId),

    /** An account made by an admin: whatever REGISTRATION says, and with its email already verified. */
    createUser(input: { username: string; email: string; password: string; role?: 'user' | 'admin' }) {
      return auth.createUser({ ...input, emailVerified: true })
    },

    /** `expiresIn` seconds from now, or never; `uses` registrations. */
    async createInvite(creator: number, opts: { expiresIn?: number; uses: number }) {
      const invite = await insertInvite(db, {
        code: randomAlphanumeric(INVITE_CODE_LENGTH),
        createdBy: creator,
        maxUses: opts.uses,
        expiresAt: opts.expiresIn === undefined ? null : new Date(now() + opts.expiresIn * 1000),
      })
      return publicInvite(invite)
    },

    async listInvites() {
      return (await allInvites(db)).map(publicInvite)
    },

    /** By its id or its code; registrations it already admitted stay. */
    async revokeInvite(idOrCode: string) {
      if (!(await deleteInvite(db, idOrCode))) throw notFound('Invite not found')
    },
  }
}
