import type { ChangeFeed } from '../../db/changes'
import { type Db, type Tx, transaction } from '../../db/client'
import type { Image } from '../../db/schema'
import { badRequest, notFound } from '../../errors'
import { pageCount } from '../../http/pagination'
import { iso } from '../../lib/time'
import { parseHash } from '../../media/phash'
import type { Storage } from '../../storage'
import type { ImageService } from '../images/service'
import { pictureOf } from './picture'
import {
  anyBlockedBytes,
  blocksPage,
  blockThumbnail,
  countBlocks,
  deleteBlock,
  insertBlock,
  type NewBlock,
} from './repository'
import { createBlockIndex } from './synced-index'

/** The one answer to a blocked upload, whichever hash matched. */
export const BLOCKED_MESSAGE = 'This image was removed after an abuse report and cannot be uploaded again'

export type BlockService = ReturnType<typeof createBlockService>

/**
 * The blocklist: pictures no upload may bring back, matched by the SHA-256 of the bytes and by perceptual hash within
 * `maxDistance` bits (BLOCK_HAMMING_DISTANCE). The perceptual hashes live in memory
 * (src/modules/blocks/synced-index.ts), loaded at start; blocks added by anyone (this process, the CLI beside it) are
 * picked up at the next check by id, lifted ones are dropped at once.
 */
export function createBlockService(deps: {
  db: Db
  /** Blocks lifted by any instance (PostgreSQL) leave the index (SQLite: one process lifts, this one). */
  changes?: ChangeFeed
  storage: Storage
  maxDistance: number
  /** Base of the thumbnail links in the admin list. */
  publicUrl: string
}) {
  const { db, storage } = deps
  const index = createBlockIndex(deps)
  const sync = index.sync

  type PageRow = Awaited<ReturnType<typeof blocksPage>>[number]
  const view = (row: PageRow) => ({
    id: row.id,
    phash: row.phash,
    sha256: row.sha256s,
    reason: row.reason,
    source: row.source,
    imageId: row.imageId,
    reportId: row.reportId,
    thumbnail: row.hasThumbnail ? `${deps.publicUrl}/api/admin/blocks/${row.id}/thumbnail` : null,
    createdAt: iso(row.createdAt),
  })

  async function get(id: number) {
    const [row] = await blocksPage(db, { limit: 1, offset: 0, id })
    if (!row) throw notFound('Block not found')
    return view(row)
  }

  return {
    /** Refuses bytes that were blocked, by the SHA-256 of the bytes as received: checked before any decoding. */
    async refuseBytes(sha256s: string[]) {
      if (sha256s.length > 0 && (await anyBlockedBytes(db, sha256s))) throw badRequest(BLOCKED_MESSAGE)
    },

    /** Refuses pictures within BLOCK_HAMMING_DISTANCE of a blocked one (null: a picture too plain to hash). */
    async refusePictures(phashes: (string | null)[]) {
      await sync()
      if (phashes.some((h) => h !== null && index.nearest(h) !== null)) throw badRequest(BLOCKED_MESSAGE)
    },

    /**
     * What blocking this image records: its perceptual hash, the SHA-256 of its bytes as uploaded and as stored
     * (metadata stripping changes them: a copy saved from the direct link is refused too), and its thumbnail when
     * `keepThumbnail`. `known` is what a report kept of it, for an image already gone.
     */
    pictureOf: (image: Image | null, known: { sha256: string; phash: string | null }, keepThumbnail = false) =>
      pictureOf(storage, image, known, keepThumbnail),

    /** Records a block (in the caller's transaction when it removes the image at the same time); returns its id. */
    record: (tx: Db | Tx, block: NewBlock) => insertBlock(tx, block),

    /** Removes a live image and blocks it (POST /api/admin/images/:id/block). */
    async blockImage(images: ImageService, id: string, opts: { reason?: string; keepThumbnail?: boolean }) {
      const image = await images.find(id)
      if (!image) throw notFound('Image not found')
      const picture = await pictureOf(storage, image, image, opts.keepThumbnail)
      let blockId = 0
      await images.remove(image, function* (tx) {
        blockId = yield* insertBlock(tx, {
          ...picture,
          reason: opts.reason?.trim() || 'Blocked by an administrator',
          source: 'admin',
          imageId: image.id,
        })
      })
      return { success: true as const, block: await get(blockId) }
    },

    /**
     * Blocks hex hashes, one a line (a hash list received from elsewhere): blank lines and `#` comments are skipped,
     * a hash already blocked is counted and left, a line that is not a hash is reported with its number.
     */
    async importHashes(text: string, reason: string) {
      await sync()
      const bad: { line: number; text: string }[] = []
      let added = 0
      let already = 0
      await transaction(db, function* (tx) {
        for (const [i, raw] of text.split(/\r?\n/).entries()) {
          const line = raw.trim()
          if (line === '' || line.startsWith('#')) continue
          const phash = parseHash(line)
          if (!phash) bad.push({ line: i + 1, text: line.slice(0, 80) })
          else if (index.nearest(phash)?.distance === 0) already++
          else {
            index.add(yield* insertBlock(tx, { phash, sha256s: [], reason, source: 'import' }), phash)
            added++
          }
        }
      })
      return { added, alreadyBlocked: already, bad }
    },

    get,

    async list(opts: { page: number; limit: number; offset: number }) {
      const [total, rows] = await Promise.all([countBlocks(db), blocksPage(db, opts)])
      return {
        success: true as const,
        blocks: rows.map(view),
        total,
        page: opts.page,
        limit: opts.limit,
        pages: pageCount(total, opts.limit),
      }
    },

    /** Lifts a block: the picture may be uploaded again. */
    async lift(id: number) {
      if (!(await deleteBlock(db, id))) throw notFound('Block not found')
      index.remove(id)
      return { success: true as const }
    },

    async thumbnail(id: number): Promise<Buffer> {
      const thumbnail = await blockThumbnail(db, id)
      if (!thumbnail) throw notFound('No thumbnail kept for this block')
      return thumbnail
    },
  }
}
