import { type Db, transaction } from '../../db/client'
import type { User } from '../../db/schema'
import { badRequest } from '../../errors'
import { randomToken, sha256Hex } from '../../lib/crypto'
import { DAY_MS } from '../../lib/time'
import type { Mailer } from './mailer'
import { claimVerification, findVerification, insertVerification, setUserFields } from './repository'

const VERIFICATION_TTL_MS = 2 * DAY_MS

/** Proving an account's email address: a mailed token, used once within two days. */
export function emailVerification(db: Db, mailer: Mailer) {
  async function issueVerification(user: User) {
    const token = randomToken()
    await insertVerification(db, {
      tokenHash: sha256Hex(token),
      userId: user.id,
      expiresAt: new Date(Date.now() + VERIFICATION_TTL_MS),
    })
    await mailer.sendVerification(user.email, token)
  }

  return {
    issueVerification,

    async verifyEmail(token: string) {
      const now = new Date()
      const row = await findVerification(db, sha256Hex(token), 'verify')
      if (!row || row.usedAt || row.expiresAt < now) throw badRequest('Verification token is invalid or expired')
      await transaction(db, function* (tx) {
        if (!(yield* claimVerification(tx, row.tokenHash, now)))
          throw badRequest('Verification token is invalid or expired')
        yield* setUserFields(tx, row.userId, { emailVerified: true })
      })
    },

    async resendVerification(user: User) {
      if (user.emailVerified) throw badRequest('Email is already verified')
      await issueVerification(user)
    },
  }
}
