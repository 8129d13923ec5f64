import type { Config } from '../../config'
import { type Db, run, transaction } from '../../db/client'
import type { User } from '../../db/schema'
import { badRequest, type DomainError } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { randomToken, sha256Hex } from '../../lib/crypto'
import { HOUR_MS } from '../../lib/time'
import { guessWindow, refundAttempt, takeAttempt } from '../../limits/windows'
import type { Mailer } from './mailer'
import { PASSWORD_LENGTH } from './model'
import {
  claimVerification,
  deleteSessionsOf,
  findUserByEmail,
  findVerification,
  insertVerification,
  setUserFields,
} from './repository'

const RESET_TTL_MS = HOUR_MS

/** The password rule, for registration, password change and reset alike. */
export function checkPassword(password: string, field = 'password') {
  if (password.length < PASSWORD_LENGTH.min || password.length > PASSWORD_LENGTH.max)
    throw badRequest(`${field} must be ${PASSWORD_LENGTH.min}-${PASSWORD_LENGTH.max} characters`)
}

export const hashPassword = (password: string) => Bun.password.hash(password, { algorithm: 'argon2id' })

/** No account answers to a longer name (emails end at 254 characters): longer ones share one throttle key. */
const LOGIN_KEY_LENGTH = 254

/**
 * The throttle key of failed logins: the account's, whichever of its names (username, email) is typed, so guesses
 * under both count together; a name no account answers to is counted as typed (lower-cased), so probing unknown names
 * is throttled too. The prefixes differ: no typed name can take an account's key.
 */
export const loginKey = (login: string, user: User | undefined) =>
  user ? accountLoginKey(user) : `login:${login.toLowerCase().slice(0, LOGIN_KEY_LENGTH)}`
const accountLoginKey = (user: User) => `login-account:${user.id}`

/** Changing a password, and recovering a forgotten one by email (the auth service's password use cases). */
export function passwordCases(db: Db, mailer: Mailer, guesses: Config['limits']['guesses'], now: () => number) {
  /**
   * Checks the account's current password before a change that needs it (`wrong`: the error of a wrong one). Wrong
   * ones count in the account's failed-login window: a stolen token cannot guess the password faster than a login could.
   */
  async function confirmPassword(user: User, password: string, wrong: () => DomainError) {
    const window = guessWindow(
      guesses,
      accountLoginKey(user),
      guesses.loginPerAccount,
      'Too many failed logins for this account',
    )
    const at = now()
    await takeAttempt(db, [window], at)
    if (!(await Bun.password.verify(password, user.passwordHash))) throw wrong()
    await refundAttempt(db, [window], at)
  }

  return {
    confirmPassword,

    /** Changes the password when the current one is right (confirmPassword), and ends every other session. */
    async changePassword(user: User, session: string, input: { currentPassword: string; newPassword: string }) {
      checkPassword(input.newPassword, 'newPassword')
      await confirmPassword(user, input.currentPassword, () => badRequest('currentPassword is wrong'))
      const passwordHash = await hashPassword(input.newPassword)
      await transaction(db, function* (tx) {
        yield* setUserFields(tx, user.id, { passwordHash })
        yield* deleteSessionsOf(tx, user.id, session)
      })
    },

    /**
     * Mails a reset token (single use, 1 hour) when an account has this email. The answer and its timing are the same
     * either way: the caller learns nothing about the address, and requests are throttled per address and per email.
     */
    async forgotPassword(email: string, ip: string) {
      const key = email.toLowerCase().slice(0, LOGIN_KEY_LENGTH)
      const perEmail = guessWindow(
        guesses,
        `forgot:${key}`,
        guesses.loginPerAccount,
        'Too many reset requests for this email',
      )
      const perIp = guessWindow(
        guesses,
        `forgot-ip:${ipKey(ip)}`,
        guesses.loginPerIp,
        'Too many reset requests from this address',
      )
      const at = now()
      await takeAttempt(db, [perEmail, perIp], at)
      const user = await run(findUserByEmail(db, email))
      if (!user || user.banned) return
      const token = randomToken()
      await insertVerification(db, {
        tokenHash: sha256Hex(token),
        userId: user.id,
        expiresAt: new Date(at + RESET_TTL_MS),
        purpose: 'reset',
      })
      // Not awaited: an SMTP round trip would make a known address answer later than an unknown one.
      void mailer.sendPasswordReset(user.email, token)
    },

    /** Sets a new password with a reset token (once), and ends every session of the account. */
    async resetPassword(token: string, newPassword: string) {
      checkPassword(newPassword, 'newPassword')
      const at = new Date(now())
      const row = await findVerification(db, sha256Hex(token), 'reset')
      const invalid = () => badRequest('Reset token is invalid or expired')
      if (!row || row.usedAt || row.expiresAt <= at) throw invalid()
      const passwordHash = await hashPassword(newPassword)
      await transaction(db, function* (tx) {
        if (!(yield* claimVerification(tx, row.tokenHash, at))) throw invalid()
        yield* setUserFields(tx, row.userId, { passwordHash })
        yield* deleteSessionsOf(tx, row.userId)
      })
    },
  }
}
