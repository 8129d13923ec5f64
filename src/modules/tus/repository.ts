import { and, count, eq, gt, isNull, lte } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { type TusUpload, tusUploads } from '../../db/schema'

/** Every query of the tus_uploads table. */

export const findTusUpload = (db: Db, id: string): TusUpload | undefined =>
  db.select().from(tusUploads).where(eq(tusUploads.id, id)).get()

/** Whether an upload with this id exists (its data file is not an orphan). */
export const tusUploadExists = (db: Db, id: string): boolean =>
  db.select({ id: tusUploads.id }).from(tusUploads).where(eq(tusUploads.id, id)).get() !== undefined

/** Unfinished, unexpired uploads of an account, or of anonymous callers at an IP key. */
export function countOpenUploads(db: Db, owner: { userId: number } | { ipKey: string }, now: number): number {
  const ownedBy =
    'userId' in owner
      ? eq(tusUploads.userId, owner.userId)
      : and(isNull(tusUploads.userId), eq(tusUploads.ip, owner.ipKey))
  return db
    .select({ n: count() })
    .from(tusUploads)
    .where(and(ownedBy, isNull(tusUploads.finishedAt), gt(tusUploads.expiresAt, new Date(now))))
    .get()!.n
}

export const insertTusUpload = (db: Db, values: typeof tusUploads.$inferInsert): TusUpload =>
  db.insert(tusUploads).values(values).returning().get()

export const updateTusUpload = (db: Db, id: string, set: Partial<TusUpload>): TusUpload =>
  db.update(tusUploads).set(set).where(eq(tusUploads.id, id)).returning().get()!

/** As updateTusUpload, without reading the row back. */
export const setTusUploadFields = (db: Db, id: string, set: Partial<TusUpload>) =>
  db.update(tusUploads).set(set).where(eq(tusUploads.id, id)).run()

export const deleteTusUpload = (db: Db, id: string) => db.delete(tusUploads).where(eq(tusUploads.id, id)).run()

/** Ids of the uploads expired by `now`. */
export const expiredTusUploads = (db: Db, now: number) =>
  db
    .select({ id: tusUploads.id })
    .from(tusUploads)
    .where(lte(tusUploads.expiresAt, new Date(now)))
    .all()
