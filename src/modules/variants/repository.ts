import { and, asc, eq, gt, inArray, notExists, sql } from 'drizzle-orm'
import { type Db, q, transaction } from '../../db/client'
import { variantFailures, variants } from '../../db/schema'
import type { StorageKey } from '../../storage'
import { imageWithId } from '../images/repository'

/** Every query of the variants and variant_failures tables. */
export const isStored = async (db: Db, key: StorageKey) =>
  (await db.select({ key: variants.key }).from(variants).where(eq(variants.key, key))).length > 0

export async function recordVariant(db: Db, row: { key: StorageKey; imageId: string; bytes: number; at: number }) {
  await db
    .insert(variants)
    .values({ key: row.key, imageId: row.imageId, bytes: row.bytes, lastUsedAt: new Date(row.at) })
    .onConflictDoUpdate({ target: variants.key, set: { bytes: row.bytes, lastUsedAt: new Date(row.at) } })
}

/** Writes last uses in one transaction. */
export function writeUses(db: Db, uses: Map<StorageKey, number>) {
  return transaction(db, function* (tx) {
    for (const [key, at] of uses)
      yield* q(
        tx
          .update(variants)
          .set({ lastUsedAt: new Date(at) })
          .where(eq(variants.key, key)),
      )
  })
}

export const storedBytes = async (db: Db) =>
  Number(
    (await db.select({ total: sql<number>`coalesce(sum(${variants.bytes}), 0)`.mapWith(Number) }).from(variants))[0]
      ?.total ?? 0,
  )

export const leastRecentlyUsed = async (db: Db, limit: number) =>
  await db
    .select({ key: variants.key, bytes: variants.bytes })
    .from(variants)
    .orderBy(asc(variants.lastUsedAt), asc(variants.createdAt))
    .limit(limit)

export const variantsOf = async (db: Db, imageId: string) =>
  await db.select({ key: variants.key }).from(variants).where(eq(variants.imageId, imageId))

/** Variant rows forgetOrphanVariants looks at per statement. */
const ORPHAN_BATCH = 500

/** Removes the row; true when there was one (whoever removes it deletes its file). */
export const forgetVariant = async (db: Db, key: StorageKey) =>
  (await db.delete(variants).where(eq(variants.key, key)).returning({ key: variants.key })).length > 0

/**
 * Drops the rows of variants whose image is gone without them (a crash between the two, an account's images going
 * with it), so their files count as strays for the orphan sweep and `cli check`. The table is walked by key a batch
 * at a time, with one probe of images per variant row (`NOT IN (SELECT id FROM images)` gathers every image id
 * first, a cost that grows with the library whatever the variants), the event loop given back between batches.
 */
export async function forgetOrphanVariants(db: Db) {
  let after = ''
  for (;;) {
    const keys = (
      await db
        .select({ key: variants.key })
        .from(variants)
        .where(gt(variants.key, after))
        .orderBy(asc(variants.key))
        .limit(ORPHAN_BATCH)
    ).map((r) => r.key)
    if (keys.length === 0) return
    await db.delete(variants).where(and(inArray(variants.key, keys), notExists(imageWithId(db, variants.imageId))))
    after = keys.at(-1)!
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Which of `keys` are stored variants' (the orphan sweep's question about a batch of stored files). */
export const variantsAmong = async (db: Db, keys: StorageKey[]): Promise<StorageKey[]> =>
  keys.length === 0
    ? []
    : (await db.select({ key: variants.key }).from(variants).where(inArray(variants.key, keys))).map((r) => r.key)

/** A backup's copy of the database holds no variants (their files are not backed up). */
export const forgetAllVariants = async (db: Db) => await db.delete(variants)

/** Why a size could not be made, if it failed before (on any instance). */
export const failureOf = async (db: Db, key: StorageKey) =>
  (await db.select({ reason: variantFailures.reason }).from(variantFailures).where(eq(variantFailures.key, key)))[0]
    ?.reason

/** Remembers a size that could not be made (the first reason stays); the row goes with its image. */
export async function recordFailure(db: Db, row: { key: StorageKey; imageId: string; reason: string }) {
  await db.insert(variantFailures).values(row).onConflictDoNothing()
}
