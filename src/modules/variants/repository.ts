import { asc, eq, notInArray, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { images, variants } from '../../db/schema'
import type { StorageKey } from '../../storage'

/** Every query of the variants table. */
export const isStored = (db: Db, key: StorageKey) =>
  db.select({ key: variants.key }).from(variants).where(eq(variants.key, key)).get() !== undefined

export function recordVariant(db: Db, row: { key: StorageKey; imageId: string; bytes: number; at: number }) {
  db.insert(variants)
    .values({ key: row.key, imageId: row.imageId, bytes: row.bytes, lastUsedAt: new Date(row.at) })
    .onConflictDoUpdate({ target: variants.key, set: { bytes: row.bytes, lastUsedAt: new Date(row.at) } })
    .run()
}

/** Writes last uses in one transaction. */
export function writeUses(db: Db, uses: Map<StorageKey, number>) {
  db.transaction((tx) => {
    for (const [key, at] of uses)
      tx.update(variants)
        .set({ lastUsedAt: new Date(at) })
        .where(eq(variants.key, key))
        .run()
  })
}

export const storedBytes = (db: Db) =>
  db
    .select({ total: sql<number>`coalesce(sum(${variants.bytes}), 0)` })
    .from(variants)
    .get()!.total

export const leastRecentlyUsed = (db: Db, limit: number) =>
  db
    .select({ key: variants.key, bytes: variants.bytes })
    .from(variants)
    .orderBy(asc(variants.lastUsedAt), asc(variants.createdAt))
    .limit(limit)
    .all()

export const variantsOf = (db: Db, imageId: string) =>
  db.select({ key: variants.key }).from(variants).where(eq(variants.imageId, imageId)).all()

/** Removes the row; true when there was one (whoever removes it deletes its file). */
export const forgetVariant = (db: Db, key: StorageKey) =>
  db.delete(variants).where(eq(variants.key, key)).returning({ key: variants.key }).all().length > 0

/**
 * The keys of stored variants, for the orphan sweep and `cli check`: rows of images removed without their variants (a
 * crash between the two, an account's images going with it) are dropped first, so their files count as strays.
 */
export function storedVariantKeys(db: Db): StorageKey[] {
  db.delete(variants)
    .where(notInArray(variants.imageId, db.select({ id: images.id }).from(images)))
    .run()
  return db
    .select({ key: variants.key })
    .from(variants)
    .all()
    .map((row) => row.key)
}

/** A backup's copy of the database holds no variants (their files are not backed up). */
export const forgetAllVariants = (db: Db) => db.delete(variants).run()
