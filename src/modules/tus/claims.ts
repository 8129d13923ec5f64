import type { TusUpload } from '../../db/schema'
import { Gone, Locked, notFound } from '../../errors'
import { log } from '../../log'
import { TUS_ID, type TusContext } from './context'
import { claimTusUpload, findTusUpload, releaseTusClaim, updateClaimedTusUpload } from './repository'
import type { TusCaller } from './service'

/** A request's hold on an upload: the `claimed_until` it wrote last (which is also its token in the row). */
export interface Claim {
  id: string
  until: number
  /** Set once a renewal found the row claimed by another request (or gone): this one must stop writing. */
  lost: boolean
  /** The claim's writes run one at a time: a renewal never races the request's own update of the row. */
  queue: Promise<unknown>
  renewal?: ReturnType<typeof setInterval>
}

const busyError = () => new Locked('Upload is busy: another request is writing to it')

export const lostError = () =>
  new Locked('Upload is busy: this request held it too long and another request took it over')

/** The upload, if it is the caller's: same endpoint and same account (anonymous ones: any anonymous caller holding the URL). */
export async function find(ctx: TusContext, caller: TusCaller, id: string, now = ctx.clock()): Promise<TusUpload> {
  const row = TUS_ID.test(id) ? await findTusUpload(ctx.db, id) : undefined
  if (!row || row.endpoint !== caller.endpoint || row.userId !== (caller.user?.id ?? null))
    throw notFound('Upload not found')
  if (row.expiresAt.getTime() <= now) throw new Gone('Upload expired')
  return row
}

/**
 * The caller's upload (as `find`), held by this request until `letGo`, whichever instance it reached: 423 while
 * another request holds it. The claim is one conditional UPDATE of the row (src/modules/tus/repository.ts), which
 * returns the row as of the claim; it lasts `claimMs` and is renewed while the request runs.
 */
export async function claim(ctx: TusContext, caller: TusCaller, id: string): Promise<{ row: TusUpload; held: Claim }> {
  const { claimMs } = ctx
  const now = ctx.clock()
  const owner = { endpoint: caller.endpoint, userId: caller.user?.id ?? null }
  const row = TUS_ID.test(id) ? await claimTusUpload(ctx.db, id, owner, now, now + claimMs) : undefined
  if (!row) {
    // Not claimed: not the caller's (404), expired (410), or held by another request (423).
    await find(ctx, caller, id, now)
    throw busyError()
  }
  const held: Claim = { id, until: now + claimMs, lost: false, queue: Promise.resolve() }
  held.renewal = setInterval(() => void renew(ctx, held), Math.max(1, Math.floor(claimMs / 3)))
  held.renewal.unref?.()
  ctx.holding.add(id)
  return { row, held }
}

/** Runs one write of a claim after the ones before it. */
function inTurn<T>(held: Claim, write: () => Promise<T>): Promise<T> {
  const done = held.queue.then(write)
  held.queue = done.catch(() => {})
  return done
}

/** Extends the claim; a row claimed by another request since (this one's ran out) marks it lost. */
function renew(ctx: TusContext, held: Claim) {
  return inTurn(held, async () => {
    if (held.lost) return
    const until = ctx.clock() + ctx.claimMs
    try {
      if (await updateClaimedTusUpload(ctx.db, held.id, held.until, { claimedUntil: new Date(until) }))
        held.until = until
      else held.lost = true
    } catch (error) {
      // Tried again at the next turn; the claim runs out if the database stays out of reach that long.
      log.warn('tus: renewing a claim failed', { id: held.id, error: String(error) })
    }
  })
}

/** Whether the request still holds its claim: not lost, and not run out by this clock (renewals keep it ahead). */
export const stillHeld = (ctx: TusContext, held: Claim) => !held.lost && ctx.clock() < held.until

/** Updates the row while the claim is the request's own; 423 once it was lost (the row is another request's). */
export async function updateHeld(ctx: TusContext, held: Claim, set: Partial<TusUpload>): Promise<TusUpload> {
  const row = stillHeld(ctx, held)
    ? await inTurn(held, () => updateClaimedTusUpload(ctx.db, held.id, held.until, set))
    : undefined
  if (!row) {
    held.lost = true
    throw lostError()
  }
  return row
}

/** Ends the request's claim: the upload is free for the next request, on any instance. */
export async function letGo(ctx: TusContext, held: Claim) {
  clearInterval(held.renewal)
  ctx.holding.delete(held.id)
  await inTurn(held, async () => {
    if (!held.lost) await releaseTusClaim(ctx.db, held.id, held.until)
  }).catch((error) =>
    // It runs out on its own.
    log.warn('tus: releasing a claim failed', { id: held.id, error: String(error) }),
  )
}
