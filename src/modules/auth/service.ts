import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { ApiKey, User } from '../../db/schema'
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { randomAlphanumeric, randomToken, sha256Hex } from '../../lib/crypto'
import { DAY_MS, iso } from '../../lib/time'
import { clearWindows, guessWindow, refundAttempt, takeAttempt } from '../images/limits'
import type { Mailer } from './mailer'
import { PASSWORD_LENGTH, USERNAME_LENGTH, USERNAME_PATTERN } from './model'
import {
  claimVerification,
  deleteKey,
  findKeyOwner,
  findTaken,
  findUserById,
  findUserByLogin,
  findVerification,
  insertKey,
  insertUser,
  insertVerification,
  keysOf,
  setUserFields,
  updateUser,
  writeKeyUses,
} from './repository'

const VERIFICATION_TTL_MS = 2 * DAY_MS
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

export function checkNewAccount(input: { username: string; email: string; password: string }) {
  if (!USERNAME.test(input.username))
    throw badRequest(
      `username must be ${USERNAME_LENGTH.min}-${USERNAME_LENGTH.max} characters of letters, digits, _ or -`,
    )
  if (input.email.length > 254 || !EMAIL.test(input.email)) throw badRequest('email is not a valid address')
  if (input.password.length < PASSWORD_LENGTH.min || input.password.length > PASSWORD_LENGTH.max)
    throw badRequest(`password must be ${PASSWORD_LENGTH.min}-${PASSWORD_LENGTH.max} characters`)
}

/** No account answers to a longer name (emails end at 254 characters): longer ones share one throttle key. */
const LOGIN_KEY_LENGTH = 254

/** The throttle key of a login name: the name as typed, so an unknown name throttles exactly like a known one. */
const loginKey = (login: string) => `login:${login.toLowerCase().slice(0, LOGIN_KEY_LENGTH)}`

/** The account, unless it is banned (403): every way of signing in ends here. */
export function assertActive(user: User) {
  if (user.banned) throw forbidden('This account is banned')
  return user
}

export type AuthService = ReturnType<typeof createAuthService>

/** `now` is the failed-login windows' clock (tests step it). */
export function createAuthService(
  db: Db,
  mailer: Mailer,
  guesses: Config['limits']['guesses'],
  now: () => number = Date.now,
) {
  // Verifying against a real hash when the account does not exist keeps login timing the same either way.
  const dummyHash = Bun.password.hashSync(randomToken(), { algorithm: 'argon2id' })

  const findByLogin = (login: string) => findUserByLogin(db, login)

  const findById = (id: number) => findUserById(db, id)

  // API key uses (key id -> time of the last use), kept in memory and written in batches by flushKeyUses: a write on
  // every request would make each one fail, or wait, whenever the database cannot be written.
  const keyUses = new Map<number, number>()

  async function issueVerification(user: User) {
    const token = randomToken()
    insertVerification(db, {
      tokenHash: sha256Hex(token),
      userId: user.id,
      expiresAt: new Date(Date.now() + VERIFICATION_TTL_MS),
    })
    await mailer.sendVerification(user.email, token)
  }

  return {
    findById,

    async createUser(input: {
      username: string
      email: string
      password: string
      role?: 'user' | 'admin'
      emailVerified?: boolean
    }) {
      checkNewAccount(input)
      const taken = findTaken(db, input.username, input.email)
      if (taken) {
        throw conflict(
          taken.username.toLowerCase() === input.username.toLowerCase()
            ? 'username is already taken'
            : 'email is already registered',
        )
      }
      const passwordHash = await Bun.password.hash(input.password, { algorithm: 'argon2id' })
      try {
        return insertUser(db, {
          username: input.username,
          email: input.email,
          passwordHash,
          role: input.role ?? 'user',
          emailVerified: input.emailVerified ?? false,
        })
      } catch (error) {
        // Two registrations racing past the check above: the unique indexes decide.
        if (String(error).includes('UNIQUE')) throw conflict('username or email is already registered')
        throw error
      }
    },

    async register(input: { username: string; email: string; password: string }) {
      const user = await this.createUser(input)
      await issueVerification(user)
      return user
    },

    /**
     * Failed logins are throttled per login name (across addresses) and per address, checked before the password
     * hash is verified, so a refused guess costs no hashing; a successful login starts its account's count over.
     */
    async login(login: string, password: string, ip: string) {
      const window = (key: string, limit: number, message: string) => guessWindow(guesses, key, limit, message)
      const account = window(loginKey(login), guesses.loginPerAccount, 'Too many failed logins for this account')
      const address = window(`login-ip:${ipKey(ip)}`, guesses.loginPerIp, 'Too many failed logins from this address')
      const at = now()
      takeAttempt(db, [account, address], at)
      const user = findByLogin(login)
      const ok = await Bun.password.verify(password, user?.passwordHash ?? dummyHash)
      if (!user || !ok) throw unauthorized('Invalid username or password')
      // Under both names the account answers to; the address gets its attempt back (it was not a failure).
      clearWindows(db, [loginKey(user.username), loginKey(user.email)])
      refundAttempt(db, [address], at)
      return assertActive(user)
    },

    /** The user behind a verified JWT subject; a deleted account is a 401, a banned one 403. */
    sessionUser(userId: number) {
      const user = findById(userId)
      if (!user) throw unauthorized('Invalid or expired token')
      return assertActive(user)
    },

    /** The user behind an API key secret; notes the key's use (lastUsedAt, written by flushKeyUses). */
    keyUser(secret: string) {
      if (!secret.startsWith(KEY_PREFIX)) throw unauthorized('Invalid API key')
      const row = findKeyOwner(db, sha256Hex(secret))
      if (!row) throw unauthorized('Invalid API key')
      assertActive(row.user)
      keyUses.set(row.keyId, Date.now())
      return row.user
    },

    /**
     * Writes the buffered lastUsedAt times in one transaction (every few seconds and at shutdown). Best effort: a
     * failure (a locked or read-only database) throws and keeps them all for the next flush.
     */
    flushKeyUses() {
      if (keyUses.size === 0) return
      const batch = [...keyUses]
      writeKeyUses(db, batch)
      // Committed in the same synchronous step: no use was noted meanwhile.
      keyUses.clear()
    },

    async verifyEmail(token: string) {
      const now = new Date()
      const row = findVerification(db, sha256Hex(token))
      if (!row || row.usedAt || row.expiresAt < now) throw badRequest('Verification token is invalid or expired')
      db.transaction((tx) => {
        if (!claimVerification(tx, row.tokenHash, now)) throw badRequest('Verification token is invalid or expired')
        setUserFields(tx, row.userId, { emailVerified: true })
      })
    },

    async resendVerification(user: User) {
      if (user.emailVerified) throw badRequest('Email is already verified')
      await issueVerification(user)
    },

    updateAccount(user: User, changes: { privateAccount?: boolean }) {
      if (changes.privateAccount === undefined) return user
      return updateUser(db, user.id, { privateAccount: changes.privateAccount })!
    },

    listKeys(user: User) {
      const keys = keysOf(db, user.id)
      // Uses not yet flushed count already.
      return keys.map((key) => (keyUses.has(key.id) ? { ...key, lastUsedAt: new Date(keyUses.get(key.id)!) } : key))
    },

    createKey(user: User, name: string) {
      const secret = KEY_PREFIX + randomAlphanumeric(KEY_RANDOM_LENGTH)
      const key = insertKey(db, { userId: user.id, name, prefix: secret.slice(0, 8), secretHash: sha256Hex(secret) })
      return { key, secret }
    },

    deleteKey(user: User, id: number) {
      if (!deleteKey(db, id, user.id)) throw notFound('API key not found')
    },

    /** Creates the first admin from config, once: an existing account with that name is left alone. */
    async ensureAdmin(admin: { username: string; email: string; password: string }) {
      if (!admin.username || !admin.password || !admin.email) return null
      if (findByLogin(admin.username)) return null
      return this.createUser({ ...admin, role: 'admin', emailVerified: true })
    },
  }
}
