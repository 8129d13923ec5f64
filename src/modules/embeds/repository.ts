import { and, asc, count, eq } from 'drizzle-orm'
import { type Db, q, transaction } from '../../db/client'
import { type EmbedProfile, embedProfiles } from '../../db/schema'

/** Every query of the embed_profiles table. */

/** What the images repository's viewer-page query joins: an image's embed profile, by id. */
export const profiles = { table: embedProfiles, id: embedProfiles.id }

export const findProfile = async (db: Db, id: number): Promise<EmbedProfile | undefined> =>
  (await db.select().from(embedProfiles).where(eq(embedProfiles.id, id)))[0]

/** One of the user's profiles by id. */
export const findOwnedProfile = async (db: Db, userId: number, id: number): Promise<EmbedProfile | undefined> =>
  (
    await db
      .select()
      .from(embedProfiles)
      .where(and(eq(embedProfiles.id, id), eq(embedProfiles.userId, userId)))
  )[0]

/** The user's profiles, oldest first. */
export const profilesOf = async (db: Db, userId: number): Promise<EmbedProfile[]> =>
  await db.select().from(embedProfiles).where(eq(embedProfiles.userId, userId)).orderBy(asc(embedProfiles.id))

/**
 * Creates a profile unless the user has `max` already: count and insert in one transaction writers take in turn, so
 * parallel creates can never pass the limit together. `tooMany` is thrown when they have.
 */
export function insertProfileWithin(
  db: Db,
  values: typeof embedProfiles.$inferInsert,
  max: number,
  tooMany: () => Error,
): Promise<EmbedProfile> {
  return transaction(db, function* (tx) {
    const [counted] = yield* q(
      tx.select({ n: count() }).from(embedProfiles).where(eq(embedProfiles.userId, values.userId)),
    )
    if ((counted?.n ?? 0) >= max) throw tooMany()
    const [row] = yield* q(tx.insert(embedProfiles).values(values).returning())
    return row!
  })
}

export const updateProfile = async (db: Db, id: number, set: Partial<EmbedProfile>): Promise<EmbedProfile> =>
  (await db.update(embedProfiles).set(set).where(eq(embedProfiles.id, id)).returning())[0]

/** Images that used the profile revert to the default embed through the ON DELETE SET NULL foreign key. */
export const deleteProfile = async (db: Db, id: number) =>
  await db.delete(embedProfiles).where(eq(embedProfiles.id, id))
