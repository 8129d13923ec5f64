import type { Config } from '../../config'
import type { ChangeFeed } from '../../db/changes'
import { type Db, run, transaction } from '../../db/client'
import type { ApiKey, Session, User } from '../../db/schema'
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../../errors'
import type { SessionTokens } from '../../http/auth'
import { ipKey } from '../../http/client-ip'
import { randomAlphanumeric, randomToken, sha256Hex } from '../../lib/crypto'
import { DAY_MS, HOUR_MS, iso } from '../../lib/time'
import { clearWindows, guessWindow, refundAttempt, takeAttempt } from '../images/limits'
import { liveSessions } from './live-sessions'
import type { Mailer } from './mailer'
import { PASSWORD_LENGTH, USERNAME_LENGTH, USERNAME_PATTERN } from './model'
import {
  claimInvite,
  claimVerification,
  deleteExpiredFlows,
  deleteExpiredSessions,
  deleteExpiredVerifications,
  deleteKey,
  deleteSession,
  deleteSessionsOf,
  findKeyOwner,
  findTaken,
  findUserByEmail,
  findUserById,
  findVerification,
  insertKey,
  insertSession,
  insertUser,
  insertVerification,
  keysOf,
  prepareFindUserByLogin,
  sessionsOf,
  setUserFields,
  updateUser,
  writeKeyUses,
  writeSessionUses,
} from './repository'

const VERIFICATION_TTL_MS = 2 * DAY_MS
const RESET_TTL_MS = HOUR_MS
/** What a session keeps of the browser's User-Agent header: enough to tell devices apart. */
const USER_AGENT_MAX = 256
const KEY_PREFIX = 'ihk_'
const KEY_RANDOM_LENGTH = 40
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

/** `session`: the caller's own session (the one its JWT belongs to). */
export function publicSession(session: Session, current: string) {
  return {
    id: session.id,
    createdAt: iso(session.createdAt),
    lastUsedAt: session.lastUsedAt ? iso(session.lastUsedAt) : null,
    userAgent: session.userAgent,
    ip: session.ip,
    current: session.id === current,
  }
}

/** The password rule, for registration, password change and reset alike. */
function checkPassword(password: string, field = 'password') {
  if (password.length < PASSWORD_LENGTH.min || password.length > PASSWORD_LENGTH.max)
    throw badRequest(`${field} must be ${PASSWORD_LENGTH.min}-${PASSWORD_LENGTH.max} characters`)
}

export function checkNewAccount(input: { username: string; email: string; password: string }) {
  if (!USERNAME.test(input.username))
    throw badRequest(
      `username must be ${USERNAME_LENGTH.min}-${USERNAME_LENGTH.max} characters of letters, digits, _ or -`,
    )
  if (input.email.length > 254 || !EMAIL.test(input.email)) throw badRequest('email is not a valid address')
  checkPassword(input.password)
}

const hashPassword = (password: string) => Bun.password.hash(password, { algorithm: 'argon2id' })

/** No account answers to a longer name (emails end at 254 characters): longer ones share one throttle key. */
const LOGIN_KEY_LENGTH = 254

/**
 * The throttle key of failed logins: the account's, whichever of its names (username, email) is typed, so guesses
 * under both count together; a name no account answers to is counted as typed (lower-cased), so probing unknown names
 * is throttled too. The prefixes differ: no typed name can take an account's key.
 */
const loginKey = (login: string, user: User | undefined) =>
  user ? accountLoginKey(user) : `login:${login.toLowerCase().slice(0, LOGIN_KEY_LENGTH)}`
const accountLoginKey = (user: User) => `login-account:${user.id}`

/** The account, unless it is banned (403): every way of signing in ends here. */
export function assertActive(user: User) {
  if (user.banned) throw forbidden('This account is banned')
  return user
}

export type AuthService = ReturnType<typeof createAuthService>

export interface AuthOptions {
  guesses: Config['limits']['guesses']
  registration: Config['registration']
  /** Signs the JWT of a new session. */
  tokens: Pick<SessionTokens, 'sign' | 'ttlMs'>
  /** PostgreSQL: rows changed by any instance, for the live-sessions cache (none: nothing is cached). */
  changes?: ChangeFeed
}

/** Where a session was started from, as its list shows it. */
export interface SessionOrigin {
  userAgent: string | null
  ip: string | null
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
    findById,

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
      await issueVerification(user)
      return user
    },

    /**
     * Starts a session for a signed-in user and returns its JWT (`sub` the user id, `sid` the session id). Every sign-in
     * path calls this once the user is known (register, password login, and any other).
     */
    async startSession(user: User, origin: SessionOrigin) {
      const id = randomToken(18)
      await run(
        insertSession(db, {
          id,
          userId: user.id,
          expiresAt: new Date(Date.now() + opts.tokens.ttlMs),
          userAgent: origin.userAgent?.slice(0, USER_AGENT_MAX) || null,
          ip: origin.ip,
        }),
      )
      return opts.tokens.sign({ sub: String(user.id), sid: id })
    },

    /** The user's live sessions, most recent first; `current` marks the caller's. */
    async listSessions(user: User, current: string) {
      return (await sessionsOf(db, user.id, new Date())).map((session) =>
        publicSession(
          sessionUses.has(session.id) ? { ...session, lastUsedAt: new Date(sessionUses.get(session.id)!) } : session,
          current,
        ),
      )
    },

    /** Ends one of the user's sessions (another account's is not found). */
    async endSession(user: User, id: string) {
      if (!(await run(deleteSession(db, id, user.id)))) throw notFound('Session not found')
    },

    /**
     * Changes the password when the current one is right, and ends every other session. Wrong current passwords count
     * in the account's failed-login window: a stolen token cannot guess the password faster than a login could.
     */
    async changePassword(user: User, session: string, input: { currentPassword: string; newPassword: string }) {
      checkPassword(input.newPassword, 'newPassword')
      const window = guessWindow(
        guesses,
        accountLoginKey(user),
        guesses.loginPerAccount,
        'Too many failed logins for this account',
      )
      const at = now()
      await takeAttempt(db, [window], at)
      if (!(await Bun.password.verify(input.currentPassword, user.passwordHash)))
        throw badRequest('currentPassword is wrong')
      await refundAttempt(db, [window], at)
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

    /** Ends every session of the account (a ban, or an admin's request). */
    async endAllSessions(userId: number) {
      await run(deleteSessionsOf(db, userId))
    },

    /** Removes expired sessions, emailed tokens and unfinished sign-ins (the expiry sweep calls it). */
    async sweepExpired() {
      const at = new Date()
      await deleteExpiredSessions(db, at)
      await deleteExpiredVerifications(db, at)
      await deleteExpiredFlows(db, at)
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

    /** The user behind an API key secret; notes the key's use (lastUsedAt, written by flushUses). */
    async keyUser(secret: string) {
      if (!secret.startsWith(KEY_PREFIX)) throw unauthorized('Invalid API key')
      const row = await findKeyOwner(db, sha256Hex(secret))
      if (!row) throw unauthorized('Invalid API key')
      assertActive(row.user)
      keyUses.set(row.keyId, Date.now())
      return row.user
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

    async updateAccount(user: User, changes: { privateAccount?: boolean }) {
      if (changes.privateAccount === undefined) return user
      return (await run(updateUser(db, user.id, { privateAccount: changes.privateAccount })))!
    },

    async listKeys(user: User) {
      const keys = await keysOf(db, user.id)
      // Uses not yet flushed count already.
      return keys.map((key) => (keyUses.has(key.id) ? { ...key, lastUsedAt: new Date(keyUses.get(key.id)!) } : key))
    },

    async createKey(user: User, name: string) {
      const secret = KEY_PREFIX + randomAlphanumeric(KEY_RANDOM_LENGTH)
      const key = await insertKey(db, {
        userId: user.id,
        name,
        prefix: secret.slice(0, 8),
        secretHash: sha256Hex(secret),
      })
      return { key, secret }
    },

    async deleteKey(user: User, id: number) {
      if (!(await deleteKey(db, id, user.id))) throw notFound('API key not found')
    },

    /** Creates the first admin from config, once: an existing account with that name is left alone. */
    async ensureAdmin(admin: { username: string; email: string; password: string }) {
      if (!admin.username || !admin.password || !admin.email) return null
      if (await findByLogin(admin.username)) return null
      return this.createUser({ ...admin, role: 'admin', emailVerified: true })
    },
  }
}
