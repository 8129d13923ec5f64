import type { ChangeFeed } from '../../db/changes'
import type { Db } from '../../db/client'
import { unauthorized } from '../../errors'
import { hasSession } from './repository'

/** Live sessions remembered at most (an entry is a few dozen bytes); past it the memory starts over. */
const LIVE_SESSIONS_MAX = 100_000

/** The sessions a server knows to be live (auth service: sessionUser), and how it forgets them. */
export function liveSessions(db: Db, changes: ChangeFeed | undefined) {
  // Sessions known to be live (session id -> user id), so a request needs no session lookup; the account is still read
  // on every request, so a ban or a deleted account applies at once. Every DELETE of a sessions row (logout, ending
  // one, password change or reset, ban, sweep, cascade) empties it through the change feed: on SQLite inside the
  // statement, and a commit by another process (the CLI's `ban`) at the next request's look (catchUp); on PostgreSQL
  // from any instance (within its staleness bound, src/db/changes.ts). Without a feed (a tool's connection) nothing is
  // remembered. `forgotten` counts the emptyings: a lookup that an emptying overtook (its session may be the one
  // deleted) is not remembered.
  const live = new Map<string, number>()
  let forgotten = 0
  const forgetLiveSessions = () => {
    live.clear()
    forgotten++
  }
  changes?.on('sessions', forgetLiveSessions)

  /** Whether the session is known to be live without a lookup. */
  function knownLive(userId: number, sessionId: string) {
    changes?.catchUp('sessions')
    return live.get(sessionId) === userId
  }

  /** Looks the session up (401 when it has ended) and remembers it as live. */
  async function checkSession(userId: number, sessionId: string) {
    const seen = forgotten
    if (!(await hasSession(db, userId, sessionId))) throw unauthorized('Invalid or expired token')
    // A session deleted while the lookup was under way may be this one: not remembered (the next request looks again).
    if (forgotten !== seen || !changes) return
    if (live.size >= LIVE_SESSIONS_MAX) forgetLiveSessions()
    live.set(sessionId, userId)
  }

  return { known: knownLive, check: checkSession }
}
