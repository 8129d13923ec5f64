import { and, count, eq, gt, isNull, lte } from 'drizzle-orm'
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

export const updateTusUpload = async (db: Db, id: string, set: Partial<TusUpload>): Promise<TusUpload> =>
  (await db.update(tusUploads).set(set).where(eq(tusUploads.id, id)).returning())[0]!

/** As updateTusUpload, without reading the row back. */
export const setTusUploadFields = async (db: Db, id: string, set: Partial<TusUpload>) =>
  await db.update(tusUploads).set(set).where(eq(tusUploads.id, id))

export const deleteTusUpload = async (db: Db, id: string) => await db.delete(tusUploads).where(eq(tusUploads.id, id))

/** Ids of the uploads expired by `now`. */
export const expiredTusUploads = async (db: Db, now: number) =>
  await db
    .select({ id: tusUploads.id })
    .from(tusUploads)
    .where(lte(tusUploads.expiresAt, new Date(now)))
