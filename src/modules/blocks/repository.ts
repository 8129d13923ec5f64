import { and, count, desc, eq, gt, inArray, isNotNull, max, sql } from 'drizzle-orm'
import type { Db, Tx } from '../../db/client'
import { type Block, blockSha256s, blocks } from '../../db/schema'

/** Every query of the blocks and block_sha256s tables. */

export type NewBlock = Omit<typeof blocks.$inferInsert, 'id' | 'createdAt'> & { sha256s: string[] }

/** Records a block and its bytes' hashes (a hash already blocked stays with its first block). */
export function insertBlock(tx: Db | Tx, block: NewBlock): number {
  const { sha256s, ...values } = block
  const { id } = tx.insert(blocks).values(values).returning({ id: blocks.id }).get()
  if (sha256s.length > 0)
    tx.insert(blockSha256s)
      .values(sha256s.map((sha256) => ({ sha256, blockId: id })))
      .onConflictDoNothing()
      .run()
  return id
}

/** Whether any of these SHA-256 is blocked. */
export const anyBlockedBytes = (db: Db, sha256s: string[]): boolean =>
  db.select({ sha256: blockSha256s.sha256 }).from(blockSha256s).where(inArray(blockSha256s.sha256, sha256s)).get() !==
  undefined

/**
 * The newest block's id (ids only grow: AUTOINCREMENT never reuses one), as a prepared statement: `.get()?.id`, null
 * when there is none. Read at every upload check: built once (building a query costs more than running this one).
 */
export const prepareLastBlockId = (db: Db) =>
  db
    .select({ id: max(blocks.id) })
    .from(blocks)
    .prepare()

/** Perceptual hashes of the blocks after `id`, oldest first, as [id, phash] rows (no object per row: 100,000 load at start). */
export const hashesAfter = (db: Db, id: number) =>
  db
    .select({ id: blocks.id, phash: blocks.phash })
    .from(blocks)
    .where(and(gt(blocks.id, id), isNotNull(blocks.phash)))
    .orderBy(blocks.id)
    .values() as [number, string][]

export const countBlocks = (db: Db) => db.select({ n: count() }).from(blocks).get()?.n ?? 0

/** A page of blocks (or the one block `id`), newest first, with their bytes' hashes and whether a thumbnail was kept. */
export function blocksPage(db: Db, page: { limit: number; offset: number; id?: number }) {
  const rows = db
    .select({
      id: blocks.id,
      phash: blocks.phash,
      reason: blocks.reason,
      source: blocks.source,
      imageId: blocks.imageId,
      reportId: blocks.reportId,
      createdAt: blocks.createdAt,
      hasThumbnail: sql<number>`${blocks.thumbnail} is not null`,
    })
    .from(blocks)
    .where(page.id === undefined ? undefined : eq(blocks.id, page.id))
    .orderBy(desc(blocks.id))
    .limit(page.limit)
    .offset(page.offset)
    .all()
  const sha256s = rows.length
    ? db
        .select()
        .from(blockSha256s)
        .where(
          inArray(
            blockSha256s.blockId,
            rows.map((r) => r.id),
          ),
        )
        .all()
    : []
  return rows.map((r) => ({
    ...r,
    hasThumbnail: Boolean(r.hasThumbnail),
    sha256s: sha256s.filter((s) => s.blockId === r.id).map((s) => s.sha256),
  }))
}

export const blockThumbnail = (db: Db, id: number): Block['thumbnail'] | undefined =>
  db.select({ thumbnail: blocks.thumbnail }).from(blocks).where(eq(blocks.id, id)).get()?.thumbnail

/** Deletes a block with its bytes' hashes; whether it existed. */
export const deleteBlock = (db: Db, id: number): boolean =>
  db.delete(blocks).where(eq(blocks.id, id)).returning({ id: blocks.id }).all().length > 0
