import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import type { Db } from '../../db/client'
import type { Passkey, User } from '../../db/schema'
import { badRequest, type DomainError, notFound, unauthorized } from '../../errors'
import { iso } from '../../lib/time'
import { assertActive } from './active'
import { MAX_PASSKEYS } from './model'
import {
  deletePasskey,
  findPasskeyOwner,
  insertPasskey,
  notePasskeyUse,
  passkeysOf,
  saveFlow,
  takeFlow,
} from './repository'

// Loaded with the first passkey ceremony: most servers never run one, and the library and its crypto dependencies
// are ~20 MB resident.
let webauthnLibrary: Promise<typeof import('@simplewebauthn/server')> | undefined
const webauthn = () => {
  webauthnLibrary ??= import('@simplewebauthn/server')
  return webauthnLibrary
}

/** How long a ceremony's challenge can be answered; the browser's own timeout is the same. */
export const CHALLENGE_TTL_MS = 5 * 60_000
/** Challenges waiting for an answer, at most: beyond it the oldest are forgotten (their ceremony must start over). */
export const MAX_PENDING_CHALLENGES = 10_000

type Ceremony = 'register' | 'login' | 'second-factor'

/**
 * The challenges handed out and not yet answered, in the database with their expiry (the answer may reach another
 * instance): each answers one ceremony, once, for the account it was made for (null: a sign-in, whoever it turns out
 * to be).
 */
function challengeStore(db: Db, now: () => number) {
  /** Whether `challenge` is pending for this ceremony and account; it is used up either way. */
  async function take(challenge: string, ceremony: Ceremony, userId: number | null) {
    const entry = await takeFlow<PendingChallenge>(db, challenge, 'passkey', new Date(now()))
    return entry?.ceremony === ceremony && entry.userId === userId
  }

  return {
    async issue(challenge: string, ceremony: Ceremony, userId: number | null) {
      const data: PendingChallenge = { ceremony, userId }
      const expiresAt = new Date(now() + CHALLENGE_TTL_MS)
      await saveFlow(db, { key: challenge, kind: 'passkey', data, expiresAt }, MAX_PENDING_CHALLENGES)
    },
    /** Uses up the challenge the browser signed (from its client data) and returns it; `refuse` when it was not ours. */
    async signed(
      clientDataJSON: string,
      ceremony: Ceremony,
      userId: number | null,
      refuse: (message: string) => DomainError,
    ) {
      const { decodeClientDataJSON } = await import('@simplewebauthn/server/helpers')
      let challenge: string
      try {
        challenge = decodeClientDataJSON(clientDataJSON).challenge
      } catch {
        throw refuse('The passkey answer is malformed')
      }
      if (typeof challenge !== 'string' || !(await take(challenge, ceremony, userId)))
        throw refuse('The passkey challenge is unknown, used or expired: start again')
      return challenge
    },
  }
}
type PendingChallenge = { ceremony: Ceremony; userId: number | null }

const transportsOf = (passkey: Passkey): AuthenticatorTransport[] => JSON.parse(passkey.transports)

export function publicPasskey(passkey: Passkey) {
  return {
    id: passkey.id,
    name: passkey.name,
    transports: transportsOf(passkey),
    createdAt: iso(passkey.createdAt),
    lastUsedAt: passkey.lastUsedAt ? iso(passkey.lastUsedAt) : null,
  }
}

/** The library's verdict on a browser's answer; any refusal, in its words, as `refuse`'s error. */
async function verified<T>(refuse: (message: string) => DomainError, check: () => Promise<T>): Promise<T> {
  try {
    return await check()
  } catch (error) {
    throw refuse(`The passkey could not be verified: ${error instanceof Error ? error.message : String(error)}`)
  }
}

export type PasskeyService = ReturnType<typeof createPasskeyService>

/**
 * Passkeys (WebAuthn): registered from the dashboard, then a sign-in of their own (discoverable credentials: no
 * username needed) or a second factor after the password. The relying party is PUBLIC_URL: its host is the RP id, its
 * origin the only origin accepted. `now` is the challenges' clock (tests step it).
 */
export function createPasskeyService(opts: {
  db: Db
  config: { site: { publicUrl: string; name: string } }
  now?: () => number
}) {
  const { db } = opts
  const now = opts.now ?? Date.now
  const site = new URL(opts.config.site.publicUrl)
  const rp = { id: site.hostname, origin: site.origin, name: opts.config.site.name }
  const challenges = challengeStore(db, now)

  /** What a browser's answer must have been made for: this challenge, this site's origin and its relying party id. */
  const expected = (challenge: string) => ({
    expectedChallenge: challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.id,
  })

  /** Verifies an assertion for `ceremony`; `userId` when the account is known already (the second factor). */
  async function verifyAssertion(
    response: AuthenticationResponseJSON,
    ceremony: Ceremony,
    userId: number | null,
  ): Promise<User> {
    const challenge = await challenges.signed(response.response.clientDataJSON, ceremony, userId, unauthorized)
    const row = await findPasskeyOwner(db, response.id)
    if (!row || (userId !== null && row.user.id !== userId)) throw unauthorized('This passkey is not registered here')
    const { verifyAuthenticationResponse } = await webauthn()
    const newCounter = await verified(unauthorized, async () => {
      const result = await verifyAuthenticationResponse({
        response,
        ...expected(challenge),
        credential: {
          id: row.passkey.credentialId,
          publicKey: new Uint8Array(row.passkey.publicKey),
          counter: row.passkey.counter,
          transports: transportsOf(row.passkey),
        },
        // Signing in with the passkey alone needs both factors from it: possession and the user's PIN or biometrics.
        requireUserVerification: ceremony === 'login',
      })
      if (!result.verified) throw new Error('signature not verified')
      return result.authenticationInfo.newCounter
    })
    await notePasskeyUse(db, row.passkey.id, newCounter, new Date(now()))
    return assertActive(row.user)
  }

  return {
    list: (user: User) => passkeysOf(db, user.id),

    /** Options for navigator.credentials.create(): a discoverable credential, user verification required. */
    async registrationOptions(user: User) {
      const existing = await passkeysOf(db, user.id)
      if (existing.length >= MAX_PASSKEYS) throw badRequest(`An account can have at most ${MAX_PASSKEYS} passkeys`)
      const { generateRegistrationOptions } = await webauthn()
      const options = await generateRegistrationOptions({
        rpName: rp.name,
        rpID: rp.id,
        userName: user.username,
        attestationType: 'none',
        // The same authenticator twice would be one passkey under two names.
        excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: transportsOf(p) })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
        timeout: CHALLENGE_TTL_MS,
      })
      await challenges.issue(options.challenge, 'register', user.id)
      return options
    },

    /** Stores the passkey the browser made from registrationOptions' challenge. */
    async register(user: User, response: RegistrationResponseJSON, name: string) {
      const challenge = await challenges.signed(response.response.clientDataJSON, 'register', user.id, badRequest)
      const { verifyRegistrationResponse } = await webauthn()
      const credential = await verified(badRequest, async () => {
        const result = await verifyRegistrationResponse({
          response,
          ...expected(challenge),
          requireUserVerification: true,
        })
        if (!result.verified) throw new Error('attestation not verified')
        return result.registrationInfo.credential
      })
      if ((await passkeysOf(db, user.id)).length >= MAX_PASSKEYS)
        throw badRequest(`An account can have at most ${MAX_PASSKEYS} passkeys`)
      // A credential id is new at each registration, and an answer is accepted once (its challenge is used up).
      return await insertPasskey(db, {
        userId: user.id,
        credentialId: credential.id,
        publicKey: Buffer.from(credential.publicKey),
        counter: credential.counter,
        transports: JSON.stringify(response.response.transports ?? []),
        name: name.trim() || 'Passkey',
      })
    },

    /** Options for navigator.credentials.get() on the login page: any passkey of this site, no username asked. */
    async loginOptions() {
      const { generateAuthenticationOptions } = await webauthn()
      const options = await generateAuthenticationOptions({
        rpID: rp.id,
        userVerification: 'required',
        timeout: CHALLENGE_TTL_MS,
      })
      await challenges.issue(options.challenge, 'login', null)
      return options
    },

    /** The active account that signed loginOptions' challenge with one of its passkeys. */
    login: (response: AuthenticationResponseJSON) => verifyAssertion(response, 'login', null),

    /**
     * The second factor after a password: options for navigator.credentials.get() limited to this account's passkeys
     * (null when it has none), then verifySecondFactor checks the browser's answer for the same account.
     */
    async secondFactorOptions(user: User) {
      const existing = await passkeysOf(db, user.id)
      if (existing.length === 0) return null
      const { generateAuthenticationOptions } = await webauthn()
      const options = await generateAuthenticationOptions({
        rpID: rp.id,
        allowCredentials: existing.map((p) => ({ id: p.credentialId, transports: transportsOf(p) })),
        userVerification: 'preferred',
        timeout: CHALLENGE_TTL_MS,
      })
      await challenges.issue(options.challenge, 'second-factor', user.id)
      return options
    },

    /** Throws Unauthorized unless `response` signs secondFactorOptions' challenge with one of `user`'s passkeys. */
    async verifySecondFactor(user: User, response: AuthenticationResponseJSON) {
      await verifyAssertion(response, 'second-factor', user.id)
    },

    async remove(user: User, id: number) {
      if (!(await deletePasskey(db, id, user.id))) throw notFound('Passkey not found')
    },
  }
}
