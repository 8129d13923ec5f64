import { and, asc, count, eq } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { type EmbedProfile, embedProfiles } from '../../db/schema'

/** Every query of the embed_profiles table. */

/** What the images repository's viewer-page query joins: an image's embed profile, by id. */
export const profiles = { table: embedProfiles, id: embedProfiles.id }

export const findProfile = (db: Db, id: number): EmbedProfile | undefined =>
  db.select().from(embedProfiles).where(eq(embedProfiles.id, id)).get()

/** One of the user's profiles by id. */
export const findOwnedProfile = (db: Db, userId: number, id: number): EmbedProfile | undefined =>
  db
    .select()
    .from(embedProfiles)
    .where(and(eq(embedProfiles.id, id), eq(embedProfiles.userId, userId)))
    .get()

/** The user's profiles, oldest first. */
export const profilesOf = (db: Db, userId: number): EmbedProfile[] =>
  db.select().from(embedProfiles).where(eq(embedProfiles.userId, userId)).orderBy(asc(embedProfiles.id)).all()

/**
 * Creates a profile unless the user has `max` already: count and insert in one synchronous IMMEDIATE transaction, so
 * parallel creates can never pass the limit together. `tooMany` is thrown when they have.
 */
export function insertProfileWithin(
  db: Db,
  values: typeof embedProfiles.$inferInsert,
  max: number,
  tooMany: () => Error,
): EmbedProfile {
  return db.transaction(
    (tx) => {
      const n =
        tx.select({ n: count() }).from(embedProfiles).where(eq(embedProfiles.userId, values.userId)).get()?.n ?? 0
      if (n >= max) throw tooMany()
      return tx.insert(embedProfiles).values(values).returning().get()
    },
    { behavior: 'immediate' },
  )
}

export const updateProfile = (db: Db, id: number, set: Partial<EmbedProfile>): EmbedProfile =>
  db.update(embedProfiles).set(set).where(eq(embedProfiles.id, id)).returning().get()

/** Images that used the profile revert to the default embed through the ON DELETE SET NULL foreign key. */
export const deleteProfile = (db: Db, id: number) => db.delete(embedProfiles).where(eq(embedProfiles.id, id)).run()
