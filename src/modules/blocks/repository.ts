import { and, count, desc, eq, gt, inArray, isNotNull, max, sql } from 'drizzle-orm'
import { type Db, prepared, q, type Step, type Tx } from '../../db/client'
import { type Block, blockSha256s, blocks } from '../../db/schema'

/** Every query of the blocks and block_sha256s tables. */

export type NewBlock = Omit<typeof blocks.$inferInsert, 'id' | 'createdAt'> & { sha256s: string[] }

/** Records a block and its bytes' hashes (a hash already blocked stays with its first block). */
export function* insertBlock(tx: Db | Tx, block: NewBlock): Step<number> {
  const { sha256s, ...values } = block
  const [{ id }] = (yield* q(tx.insert(blocks).values(values).returning({ id: blocks.id }))) as [{ id: number }]
  if (sha256s.length > 0)
    yield* q(
      tx
        .insert(blockSha256s)
        .values(sha256s.map((sha256) => ({ sha256, blockId: id })))
        .onConflictDoNothing(),
    )
  return id
}

/** Whether any of these SHA-256 is blocked. */
export const anyBlockedBytes = async (db: Db, sha256s: string[]): Promise<boolean> =>
  (await db.select({ sha256: blockSha256s.sha256 }).from(blockSha256s).where(inArray(blockSha256s.sha256, sha256s)))
    .length > 0

/**
 * The newest block's id (ids only grow: they are never reused), null when there is none. Read at every upload check:
 * the query is built once (building one costs more than running this one).
 */
export function lastBlockId(db: Db): () => Promise<number | null> {
  const statement = prepared('last_block_id', db.select({ id: max(blocks.id) }).from(blocks))
  return async () => (await statement.execute())[0]?.id ?? null
}

/** Perceptual hashes of the blocks after `id`, oldest first, as [id, phash] pairs. */
export const hashesAfter = async (db: Db, id: number): Promise<[number, string][]> =>
  (
    await db
      .select({ id: blocks.id, phash: blocks.phash })
      .from(blocks)
      .where(and(gt(blocks.id, id), isNotNull(blocks.phash)))
      .orderBy(blocks.id)
  ).map((r) => [r.id, r.phash!])

export const countBlocks = async (db: Db) => (await db.select({ n: count() }).from(blocks))[0]?.n ?? 0

/** A page of blocks (or the one block `id`), newest first, with their bytes' hashes and whether a thumbnail was kept. */
export async function blocksPage(db: Db, page: { limit: number; offset: number; id?: number }) {
  const rows = await db
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
  const sha256s = rows.length
    ? await db
        .select()
        .from(blockSha256s)
        .where(
          inArray(
            blockSha256s.blockId,
            rows.map((r) => r.id),
          ),
        )
    : []
  return rows.map((r) => ({
    ...r,
    hasThumbnail: Boolean(r.hasThumbnail),
    sha256s: sha256s.filter((s) => s.blockId === r.id).map((s) => s.sha256),
  }))
}

export const blockThumbnail = async (db: Db, id: number): Promise<Block['thumbnail'] | undefined> =>
  (await db.select({ thumbnail: blocks.thumbnail }).from(blocks).where(eq(blocks.id, id)))[0]?.thumbnail

/** Deletes a block with its bytes' hashes; whether it existed. */
export const deleteBlock = async (db: Db, id: number): Promise<boolean> =>
  (await db.delete(blocks).where(eq(blocks.id, id)).returning({ id: blocks.id })).length > 0
