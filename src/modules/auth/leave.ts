import type { AuthenticationResponseJSON } from '@simplewebauthn/server'
import { type Db, run, transaction } from '../../db/client'
import type { User } from '../../db/schema'
import { badRequest, conflict, forbidden, notFound, Unauthorized } from '../../errors'
import { ownedImagesAfter } from '../images/repository'
import type { ImageService } from '../images/service'
import type { PasskeyService } from './passkeys'
import { deleteSessionsAndKeys, deleteUserRow, findUserById, otherAdmin } from './repository'
import type { AuthService } from './service'
import type { TotpService } from './totp'

/** Images removed per transaction: short writes, whatever the account holds. */
const REMOVE_BATCH = 100

export const LAST_ADMIN = 'The last admin cannot be deleted: make another account an admin first'

export type AccountLeave = ReturnType<typeof createAccountLeave>

/**
 * Deleting an account (by its holder, or by an admin): its images (rows, files, variants), albums, embed profiles,
 * API keys, sessions, webhooks, passkeys and two-factor; the one use case of DELETE /api/account and
 * DELETE /api/admin/users/:id.
 */
export function createAccountLeave(deps: {
  db: Db
  images: Pick<ImageService, 'removeMany'>
  auth: Pick<AuthService, 'confirmPassword'>
  totp: Pick<TotpService, 'confirm'>
  passkeys: Pick<PasskeyService, 'secondFactorOptions' | 'verifySecondFactor'>
}) {
  const { db } = deps

  async function refuseLastAdmin(user: User) {
    if (user.role === 'admin' && !(await run(otherAdmin(db, user.id)))) throw conflict(LAST_ADMIN)
  }

  /**
   * Its sessions and keys end first (its tokens answer 401 from then on, and no new upload starts), then its images
   * go a batch at a time (each image's links 404 as its batch commits; counters follow by trigger), then the row, and
   * with it everything else the account owns. An upload already past its admission that commits meanwhile goes with
   * the row; its files are orphans, which the orphan sweep removes.
   */
  async function remove(user: User) {
    await refuseLastAdmin(user)
    await transaction(db, (tx) => deleteSessionsAndKeys(tx, user.id))
    for (;;) {
      const batch = await ownedImagesAfter(db, user.id, null, REMOVE_BATCH)
      if (batch.length === 0) break
      await deps.images.removeMany(batch)
    }
    await transaction(db, function* (tx) {
      // Asked again where it is decided: two admins leaving at once cannot both go.
      if (user.role === 'admin' && !(yield* otherAdmin(tx, user.id))) throw conflict(LAST_ADMIN)
      yield* deleteSessionsAndKeys(tx, user.id)
      yield* deleteUserRow(tx, user.id)
    })
  }

  return {
    /**
     * Options for navigator.credentials.get() limited to the account's passkeys, whose answer confirms its deletion
     * in place of the password (the challenge is the second factor's: one use, this account, 5 minutes).
     */
    async passkeyOptions(user: User) {
      const options = await deps.passkeys.secondFactorOptions(user)
      if (!options) throw badRequest('This account has no passkey: confirm with your password')
      return options
    },

    /**
     * The holder's own deletion, confirmed by its password or, for an account that signs in otherwise, a current
     * two-factor code (or a recovery code) or a passkey's answer to passkeyOptions. A wrong one is 403 and deletes
     * nothing.
     */
    async leave(user: User, proof: { password?: string; code?: string; passkey?: AuthenticationResponseJSON }) {
      await refuseLastAdmin(user)
      if (proof.password !== undefined) {
        await deps.auth.confirmPassword(user, proof.password, () => forbidden('The password is wrong'))
      } else if (proof.code !== undefined) {
        if (!(await deps.totp.confirm(user, proof.code)))
          throw forbidden('The two-factor code is wrong or was already used')
      } else if (proof.passkey !== undefined) {
        // A refused passkey is no sign the session ended (its 401 would sign the page out): 403, as a wrong password.
        await deps.passkeys.verifySecondFactor(user, proof.passkey).catch((error) => {
          throw error instanceof Unauthorized ? forbidden(error.message) : error
        })
      } else {
        throw badRequest('password (or code, a two-factor code, or passkey) is required to delete the account')
      }
      await remove(user)
    },

    /** An admin's deletion of another account (its own goes through leave); 404 for an unknown id. */
    async removeByAdmin(admin: User, userId: number) {
      if (userId === admin.id) throw conflict('Delete your own account with DELETE /api/account')
      const user = await run(findUserById(db, userId))
      if (!user) throw notFound('User not found')
      await remove(user)
    },
  }
}
