import type { Config } from '../../config'
import type { ChangeFeed } from '../../db/changes'
import { type Db, run, transaction } from '../../db/client'
import type { ApiKey, User } from '../../db/schema'
import { badRequest, conflict, forbidden, unauthorized } from '../../errors'
import type { SessionTokens } from '../../http/auth'
import { ipKey } from '../../http/client-ip'
import { randomToken } from '../../lib/crypto'
import { iso } from '../../lib/time'
import { clearWindows, guessWindow, refundAttempt, takeAttempt } from '../../limits/windows'
import { assertActive } from './active'
import { apiKeys } from './keys'
import { liveSessions } from './live-sessions'
import type { Mailer } from './mailer'
import { USERNAME_LENGTH, USERNAME_PATTERN } from './model'
import { checkPassword, hashPassword, loginKey, passwordCases } from './passwords'
import {
  anyAdmin,
  claimInvite,
  findTaken,
  findUserById,
  insertUser,
  prepareFindUserByLogin,
  updateUser,
  writeKeyUses,
  writeSessionUses,
} from './repository'
import { sessionCases } from './sessions'
import { emailVerification } from './verification'

const USERNAME = new RegExp(`^${USERNAME_PATTERN}$`)
// Deliberately simple: one @, no spaces, a dot in the domain. Delivery proves the rest.
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/

/** Whether a string could be a username at all: anything else is refused before a lookup. */
export const isUsername = (value: string) => USERNAME.test(value)

export function publicUser(user: User) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    role: user.role,
    emailVerified: user.emailVerified,
    privateAccount: user.privateAccount,
    createdAt: iso(user.createdAt),
  }
}

export function publicApiKey(key: ApiKey) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: iso(key.createdAt),
    lastUsedAt: key.lastUsedAt ? iso(key.lastUsedAt) : null,
  }
}

export function checkNewAccount(input: { username: string; email: string; password: string }) {
  if (!USERNAME.test(input.username))
    throw badRequest(
      `username must be ${USERNAME_LENGTH.min}-${USERNAME_LENGTH.max} characters of letters, digits, _ or -`,
    )
  if (input.email.length > 254 || !EMAIL.test(input.email)) throw badRequest('email is not a valid address')
  checkPassword(input.password)
}

export type AuthService = ReturnType<typeof createAuthService>

export interface AuthOptions {
  guesses: Config['limits']['guesses']
  registration: Config['auth']['registration']
  /** Signs the JWT of a new session. */
  tokens: Pick<SessionTokens, 'sign' | 'ttlMs'>
  /** Rows changed (by any instance on PostgreSQL), for the live-sessions cache (none: nothing is cached). */
  changes?: ChangeFeed
}

/** `now` is the clock of the failed-login and forgot windows, reset tokens and invites (tests step it). */
export function createAuthService(db: Db, mailer: Mailer, opts: AuthOptions, now: () => number = Date.now) {
  const { guesses } = opts
  // Verifying against a real hash when the account does not exist keeps login timing the same either way. Made on
  // Bun's thread pool: half a second of argon2id the start does not spend on the event loop.
  const dummyHash = Bun.password.hash(randomToken(), { algorithm: 'argon2id' })

  const findByLogin = prepareFindUserByLogin(db)

  const findById = (id: number) => run(findUserById(db, id))

  // API key uses (key id -> time of the last use), kept in memory and written in batches by flushUses: a write on
  // every request would make each one fail, or wait, whenever the database cannot be written.
  const keyUses = new Map<number, number>()
  // Session uses (session id -> time of the last use), buffered the same way.
  const sessionUses = new Map<string, number>()

  const live = liveSessions(db, opts.changes)
  const verification = emailVerification(db, mailer)

  return {
    findById,
    ...passwordCases(db, mailer, guesses, now),
    verifyEmail: verification.verifyEmail,
    resendVerification: verification.resendVerification,
    ...apiKeys(db, keyUses),
    ...sessionCases(db, opts.tokens, sessionUses),

    /** `invite`: a code one use of which the account takes, in the same transaction (403 when none is left). */
    async createUser(input: {
      username: string
      email: string
      password: string
      role?: 'user' | 'admin'
      emailVerified?: boolean
      invite?: string
    }) {
      checkNewAccount(input)
      const taken = await run(findTaken(db, input.username, input.email))
      if (taken) {
        throw conflict(
          taken.username.toLowerCase() === input.username.toLowerCase()
            ? 'username is already taken'
            : 'email is already registered',
        )
      }
      const passwordHash = await hashPassword(input.password)
      try {
        // Awaited here, so that a unique index's refusal is caught below.
        return await transaction(db, function* (tx) {
          if (input.invite !== undefined && !(yield* claimInvite(tx, input.invite, new Date(now()))))
            throw forbidden('This invite code is invalid, used up, expired or revoked')
          return yield* insertUser(tx, {
            username: input.username,
            email: input.email,
            passwordHash,
            role: input.role ?? 'user',
            emailVerified: input.emailVerified ?? false,
          })
        })
      } catch (error) {
        // Two registrations racing past the check above: the unique indexes decide (and the invite use is undone).
        if (String(error).includes('UNIQUE')) throw conflict('username or email is already registered')
        throw error
      }
    },

    /** Self-service registration, as REGISTRATION allows: anyone, holders of an invite code, or nobody. */
    async register(input: { username: string; email: string; password: string; invite?: string }) {
      if (opts.registration === 'closed') throw forbidden('Registration is closed: an admin creates accounts')
      if (opts.registration === 'invite' && !input.invite) throw forbidden('An invite code is required to register')
      const { invite, ...account } = input
      const user = await this.createUser(opts.registration === 'invite' ? { ...account, invite } : account)
      await verification.issueVerification(user)
      return user
    },

    /**
     * Failed logins are throttled per account (its username and email together; an unknown name per name, across
     * addresses) and per address, checked before the password hash is verified, so a refused guess costs no hashing;
     * a successful login starts its account's count over.
     */
    async login(login: string, password: string, ip: string) {
      const window = (key: string, limit: number, message: string) => guessWindow(guesses, key, limit, message)
      // Looked up first: the account's window is the one counted, whichever of its names was typed.
      const user = await findByLogin(login)
      const account = window(loginKey(login, user), guesses.loginPerAccount, 'Too many failed logins for this account')
      const address = window(`login-ip:${ipKey(ip)}`, guesses.loginPerIp, 'Too many failed logins from this address')
      const at = now()
      await takeAttempt(db, [account, address], at)
      const ok = await Bun.password.verify(password, user?.passwordHash ?? (await dummyHash))
      if (!user || !ok) throw unauthorized('Invalid username or password')
      // The address gets its attempt back (it was not a failure).
      await clearWindows(db, [account.key])
      await refundAttempt(db, [address], at)
      return assertActive(user)
    },

    /**
     * The user behind a verified JWT's subject and session; an ended session or a deleted account is a 401, a banned
     * account 403. Notes the session's use (lastUsedAt, written by flushUses).
     */
    async sessionUser(userId: number, sessionId: string) {
      const user = await findById(userId)
      if (!user) throw unauthorized('Invalid or expired token')
      // A ban first: a banned account's tokens answer 403 (DECISIONS.md), though the ban has ended their sessions
      // (so they stay dead after an unban: 401 then).
      assertActive(user)
      if (!live.known(userId, sessionId)) await live.check(userId, sessionId)
      sessionUses.set(sessionId, Date.now())
      return user
    },

    /**
     * Writes the buffered lastUsedAt times of keys and sessions in one transaction (every few seconds and at shutdown).
     * Best effort: a failure (a locked or read-only database) throws and keeps them all for the next flush.
     */
    async flushUses() {
      if (keyUses.size === 0 && sessionUses.size === 0) return
      const keyBatch = [...keyUses]
      const sessionBatch = [...sessionUses]
      await transaction(db, function* (tx) {
        yield* writeKeyUses(tx, keyBatch)
        yield* writeSessionUses(tx, sessionBatch)
      })
      // What was written goes; a use noted while the transaction ran (a later time) stays for the next flush.
      for (const [id, at] of keyBatch) if (keyUses.get(id) === at) keyUses.delete(id)
      for (const [id, at] of sessionBatch) if (sessionUses.get(id) === at) sessionUses.delete(id)
    },

    async updateAccount(user: User, changes: { privateAccount?: boolean }) {
      if (changes.privateAccount === undefined) return user
      return (await run(updateUser(db, user.id, { privateAccount: changes.privateAccount })))!
    },

    /** Whether the site has an admin yet (none: the start line says how to make one). */
    hasAdmin: () => anyAdmin(db),

    /** Creates the first admin from config, once: an existing account with that name is left alone. */
    async ensureAdmin(admin: { username: string; email: string; password: string }) {
      if (!admin.username || !admin.password || !admin.email) return null
      if (await findByLogin(admin.username)) return null
      return this.createUser({ ...admin, role: 'admin', emailVerified: true })
    },
  }
}
