import { type Db, run } from '../../db/client'
import type { Session, User } from '../../db/schema'
import { notFound } from '../../errors'
import type { SessionTokens } from '../../http/auth'
import { randomToken } from '../../lib/crypto'
import { iso } from '../../lib/time'
import {
  deleteExpiredFlows,
  deleteExpiredSessions,
  deleteExpiredVerifications,
  deleteSession,
  deleteSessionsOf,
  insertSession,
  sessionsOf,
} from './repository'

/** What a session keeps of the browser's User-Agent header: enough to tell devices apart. */
const USER_AGENT_MAX = 256
/** Where a session was started from, as its list shows it. */
export interface SessionOrigin {
  userAgent: string | null
  ip: string | null
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

/**
 * An account's sessions: started, listed and ended, and the expired ones swept with the other sign-in state. `uses`
 * (session id -> time of the last use) is the auth service's buffer (sessionUser notes, flushUses writes).
 */
export function sessionCases(db: Db, tokens: Pick<SessionTokens, 'sign' | 'ttlMs'>, uses: Map<string, number>) {
  return {
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
          expiresAt: new Date(Date.now() + tokens.ttlMs),
          userAgent: origin.userAgent?.slice(0, USER_AGENT_MAX) || null,
          ip: origin.ip,
        }),
      )
      return tokens.sign({ sub: String(user.id), sid: id })
    },

    /** The user's live sessions, most recent first; `current` marks the caller's. */
    async listSessions(user: User, current: string) {
      return (await sessionsOf(db, user.id, new Date())).map((session) =>
        publicSession(
          uses.has(session.id) ? { ...session, lastUsedAt: new Date(uses.get(session.id)!) } : session,
          current,
        ),
      )
    },

    /** Ends one of the user's sessions (another account's is not found). */
    async endSession(user: User, id: string) {
      if (!(await run(deleteSession(db, id, user.id)))) throw notFound('Session not found')
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
  }
}
