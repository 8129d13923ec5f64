import { and, count, eq, gt, isNull, lt, lte, or } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { type TusUpload, tusUploads } from '../../db/schema'

/** Every query of the tus_uploads table. */

export const findTusUpload = async (db: Db, id: string): Promise<TusUpload | undefined> =>
  (await db.select().from(tusUploads).where(eq(tusUploads.id, id)))[0]

/** Whether an upload with this id exists (its data file is not an orphan). */
export const tusUploadExists = async (db: Db, id: string): Promise<boolean> =>
  (await db.select({ id: tusUploads.id }).from(tusUploads).where(eq(tusUploads.id, id))).length > 0

/** Unfinished, unexpired uploads of an account, or of anonymous callers at an IP key. */
export async function countOpenUploads(
  db: Db,
  owner: { userId: number } | { ipKey: string },
  now: number,
): Promise<number> {
  const ownedBy =
    'userId' in owner
      ? eq(tusUploads.userId, owner.userId)
      : and(isNull(tusUploads.userId), eq(tusUploads.ip, owner.ipKey))
  const [row] = await db
    .select({ n: count() })
    .from(tusUploads)
    .where(and(ownedBy, isNull(tusUploads.finishedAt), gt(tusUploads.expiresAt, new Date(now))))
  return row?.n ?? 0
}

export const insertTusUpload = async (db: Db, values: typeof tusUploads.$inferInsert): Promise<TusUpload> =>
  (await db.insert(tusUploads).values(values).returning())[0]

/** Sets fields of an upload, without reading the row back (a request that holds it: updateClaimedTusUpload). */
export const setTusUploadFields = async (db: Db, id: string, set: Partial<TusUpload>) =>
  await db.update(tusUploads).set(set).where(eq(tusUploads.id, id))

export const deleteTusUpload = async (db: Db, id: string) => await db.delete(tusUploads).where(eq(tusUploads.id, id))

/** No request holds it at `now`: never claimed, let go, or its claim ran out (its holder stopped renewing it). */
const unclaimed = (now: number) => or(isNull(tusUploads.claimedUntil), lt(tusUploads.claimedUntil, new Date(now)))

/**
 * Claims an upload until `until` for one request: the caller's (same endpoint and account), unexpired and unclaimed at
 * `now`. One conditional UPDATE, atomic on both engines (no read first), so of two requests on any instances at most
 * one gets it. The row as of the claim; undefined when there is no such upload or it is held.
 */
export const claimTusUpload = async (
  db: Db,
  id: string,
  owner: { endpoint: TusUpload['endpoint']; userId: number | null },
  now: number,
  until: number,
): Promise<TusUpload | undefined> =>
  (
    await db
      .update(tusUploads)
      .set({ claimedUntil: new Date(until) })
      .where(
        and(
          eq(tusUploads.id, id),
          eq(tusUploads.endpoint, owner.endpoint),
          owner.userId === null ? isNull(tusUploads.userId) : eq(tusUploads.userId, owner.userId),
          gt(tusUploads.expiresAt, new Date(now)),
          unclaimed(now),
        ),
      )
      .returning()
  )[0]

/** The claim `held` (its `claimed_until`) is still the row's: its holder updates the row and gets it back, else undefined. */
export const updateClaimedTusUpload = async (
  db: Db,
  id: string,
  held: number,
  set: Partial<TusUpload>,
): Promise<TusUpload | undefined> =>
  (
    await db
      .update(tusUploads)
      .set(set)
      .where(and(eq(tusUploads.id, id), eq(tusUploads.claimedUntil, new Date(held))))
      .returning()
  )[0]

/** Clears the claim `held`, unless it ran out and another request has claimed the upload since. */
export const releaseTusClaim = async (db: Db, id: string, held: number) =>
  await db
    .update(tusUploads)
    .set({ claimedUntil: null })
    .where(and(eq(tusUploads.id, id), eq(tusUploads.claimedUntil, new Date(held))))

/**
 * Deletes the uploads expired by `now` that no request holds at `claimNow` (one statement: none can be claimed in
 * between); their ids.
 */
export const deleteExpiredTusUploads = async (db: Db, now: number, claimNow: number) =>
  await db
    .delete(tusUploads)
    .where(and(lte(tusUploads.expiresAt, new Date(now)), unclaimed(claimNow)))
    .returning({ id: tusUploads.id })
