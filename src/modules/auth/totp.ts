import { randomBytes } from 'node:crypto'
import type { AuthenticationResponseJSON } from '@simplewebauthn/server'
import { Secret, TOTP } from 'otpauth'
import type { Config } from '../../config'
import { type Db, run } from '../../db/client'
import type { TotpSecret, User } from '../../db/schema'
import { badRequest, conflict, Unauthorized } from '../../errors'
import { seal, sha256Hex, unseal } from '../../lib/crypto'
import { clearWindows, guessWindow, takeAttempt } from '../../limits/windows'
import { log } from '../../log'
import type { PasskeyService } from './passkeys'
import {
  claimRecoveryCode,
  claimTotpStep,
  deleteTotp,
  enableTotp,
  findTotp,
  recoveryCodesLeft,
  savePendingTotp,
} from './repository'

/** RFC 6238 as every authenticator app reads it: SHA-1, 6 digits, 30-second steps. */
const DIGITS = 6
const PERIOD = 30
/** Codes of the step before and after are accepted too: phone clocks drift. */
const DRIFT_STEPS = 1
const SECRET_BYTES = 20
const RECOVERY_CODES = 10
/** A recovery code: 12 hex digits (48 bits), shown in groups of four. */
const RECOVERY_BYTES = 6

/** What a person types, as compared: no spaces or dashes, lower case. */
const normalize = (code: string) => code.replace(/[\s-]/g, '').toLowerCase()

const newRecoveryCode = () =>
  randomBytes(RECOVERY_BYTES)
    .toString('hex')
    .replace(/(.{4})(?!$)/g, '$1-')

export type TotpService = ReturnType<typeof createTotpService>

type TotpOptions = {
  db: Db
  key: string
  siteName: string
  guesses: Config['limits']['guesses']
  passkeys: PasskeyService
  now: () => number
}

/** Checking codes: a secret's TOTP, the step a code is of, and an attempt counted against the account's window. */
function totpCodes(opts: TotpOptions) {
  const { db, key, guesses, now } = opts

  const totpFor = (secret: string, label = '') =>
    new TOTP({
      issuer: opts.siteName,
      label,
      algorithm: 'SHA1',
      digits: DIGITS,
      period: PERIOD,
      secret: Secret.fromBase32(secret),
    })

  /** The time step a code belongs to when it is valid now (within the drift), else null. */
  function stepOf(row: TotpSecret, code: string): number | null {
    let secret: string
    try {
      secret = unseal(key, row.secret)
    } catch (error) {
      // Recovery codes still work: they do not need the secret.
      log.error('a TOTP secret cannot be unsealed (was TOTP_KEY changed?)', {
        userId: row.userId,
        error: String(error),
      })
      return null
    }
    const totp = totpFor(secret)
    const at = now()
    const delta = totp.validate({ token: code, timestamp: at, window: DRIFT_STEPS })
    return delta === null ? null : totp.counter({ timestamp: at }) + delta
  }

  /** Counts one code attempt against the account's window (429 once it is used up); returns the window. */
  async function attempt(user: User) {
    const rule = guessWindow(
      guesses,
      `totp:${user.id}`,
      guesses.loginPerAccount,
      'Too many wrong two-factor codes for this account',
    )
    await takeAttempt(db, [rule], now())
    return rule
  }

  /**
   * Whether `code` is a current TOTP code of a step not used yet (which it then uses up) or an unused recovery code
   * (likewise). Throttled per account.
   */
  async function accept(user: User, row: TotpSecret, code: string): Promise<boolean> {
    const rule = await attempt(user)
    const typed = normalize(code)
    let ok: boolean
    if (new RegExp(`^\\d{${DIGITS}}$`).test(typed)) {
      const step = stepOf(row, typed)
      ok = step !== null && (await run(claimTotpStep(db, user.id, step)))
    } else {
      ok = typed.length > 0 && (await claimRecoveryCode(db, user.id, sha256Hex(typed), new Date(now())))
    }
    if (ok) await clearWindows(db, [rule.key])
    return ok
  }

  return { totpFor, stepOf, attempt, accept }
}

/**
 * TOTP two-factor: setup, enable, disable, and the second step of a password login (a code, or one of the account's
 * `passkeys` in its place). Secrets are sealed at rest with `key`; every code or passkey check counts against the
 * account's guess window (wrong ones from anywhere add up), and a right one clears it. `now` is the clock of both the
 * codes and the windows (tests step it).
 */
export function createTotpService(opts: TotpOptions) {
  const { db, key, passkeys, now } = opts
  const { totpFor, stepOf, attempt, accept } = totpCodes(opts)

  /**
   * What a 401 of the second step carries: the step asked for and, when the account has passkeys, a new challenge
   * for one (the password was right: only then is a challenge bound to the account made).
   */
  async function askAgain(user: User) {
    const passkeyOptions = await passkeys.secondFactorOptions(user)
    return passkeyOptions ? { twoFactor: 'totp', passkeyOptions } : { twoFactor: 'totp' }
  }

  async function enabledRow(user: User) {
    const row = await run(findTotp(db, user.id))
    return row?.enabledAt ? row : null
  }

  /**
   * Whether `code` is a current code or an unused recovery code of the account (used up if so), for an action that
   * asks for one (turning two-factor off, deleting the account); 400 when two-factor is not on.
   */
  async function confirm(user: User, code: string) {
    const row = await enabledRow(user)
    if (!row) throw badRequest('Two-factor is not on')
    return await accept(user, row, code)
  }

  return {
    async status(user: User) {
      const on = (await enabledRow(user)) !== null
      return { enabled: on, recoveryCodesLeft: on ? await recoveryCodesLeft(db, user.id) : 0 }
    },

    /** A new secret for the account (replacing one never confirmed), its otpauth:// URL and that URL as a QR code. */
    async setup(user: User) {
      if (await enabledRow(user)) throw conflict('Two-factor is already on: turn it off first')
      const secret = new Secret({ size: SECRET_BYTES }).base32
      await savePendingTotp(db, user.id, seal(key, secret))
      const otpauthUrl = totpFor(secret, user.username).toString()
      // Made here, not by a third-party service: the URL holds the secret.
      // Imported here, for the rare enrolment: ~13 MB resident otherwise held by every server.
      const { default: QRCode } = await import('qrcode')
      const svg = await QRCode.toString(otpauthUrl, { type: 'svg', margin: 2 })
      return { secret, otpauthUrl, qrCode: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}` }
    },

    /** Turns TOTP on once a code from the new secret checks; answers the recovery codes (only their hashes are kept). */
    async enable(user: User, code: string) {
      const row = await run(findTotp(db, user.id))
      if (!row) throw badRequest('No two-factor setup in progress: start with POST /api/auth/totp/setup')
      if (row.enabledAt) throw conflict('Two-factor is already on')
      const rule = await attempt(user)
      const step = stepOf(row, normalize(code))
      if (step === null) throw badRequest('Invalid code: check the time on your device and try the current code')
      await clearWindows(db, [rule.key])
      const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode)
      // The code that enabled it counts as used.
      await enableTotp(
        db,
        user.id,
        step,
        codes.map((c) => sha256Hex(normalize(c))),
        new Date(now()),
      )
      return codes
    },

    /** Turns TOTP off with a current code or a recovery code. */
    async disable(user: User, code: string) {
      if (!(await confirm(user, code))) throw badRequest('Invalid code')
      await deleteTotp(db, user.id)
    },

    confirm,

    /**
     * The second step of a password login: nothing to do without TOTP (a passkey alone is no second factor: two-factor
     * is on when TOTP is). Otherwise `passkey`, an answer to the `passkeyOptions` of an earlier 401, or else `code`:
     * without either a 401 that says a second factor is needed (`twoFactor: "totp"`), as is a wrong or used one.
     */
    async checkLogin(user: User, proof: { code?: string; passkey?: AuthenticationResponseJSON }) {
      const row = await enabledRow(user)
      if (!row) return
      if (proof.passkey) {
        const rule = await attempt(user)
        try {
          await passkeys.verifySecondFactor(user, proof.passkey)
        } catch (error) {
          if (error instanceof Unauthorized) throw new Unauthorized(error.message, await askAgain(user))
          throw error
        }
        await clearWindows(db, [rule.key])
        return
      }
      if (!proof.code) throw new Unauthorized('Two-factor code required', await askAgain(user))
      if (!(await accept(user, row, proof.code)))
        throw new Unauthorized('Invalid or already used two-factor code', await askAgain(user))
    },
  }
}
