import { t } from 'elysia'
import { Nullable, NumericId, Timestamp } from '../../http/schemas'

export const BLOCK_REASON_MAX = 200

export const BlockSource = t.Union([t.Literal('report'), t.Literal('admin'), t.Literal('cli'), t.Literal('import')], {
  description: 'What made the block: a report action, an admin block of an image, `cli block`, `cli import-blocklist`',
})

export const AdminBlock = t.Object({
  id: t.Integer(),
  phash: Nullable(
    t.String({ description: '64-bit perceptual hash, 16 hex digits; null: the picture was too plain to hash' }),
  ),
  sha256: t.Array(t.String(), { description: 'SHA-256 of the blocked bytes (as uploaded and as stored)' }),
  reason: t.String(),
  source: BlockSource,
  imageId: Nullable(t.String({ description: 'The removed image, when there was one' })),
  reportId: Nullable(t.Integer({ description: 'The report acted on, when there was one' })),
  thumbnail: Nullable(
    t.String({ format: 'uri', description: 'The removed image’s thumbnail (admins only), when it was kept' }),
  ),
  createdAt: Timestamp,
})

export const AdminBlocksResponse = t.Object({
  success: t.Literal(true),
  blocks: t.Array(AdminBlock),
  total: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  pages: t.Integer(),
})

export const BlockIdParams = t.Object({ id: NumericId() })

export const BlockImageBody = t.Object({
  reason: t.Optional(
    t.String({
      maxLength: BLOCK_REASON_MAX,
      error: `reason must be at most ${BLOCK_REASON_MAX} characters`,
      description: `Why, for the block list; at most ${BLOCK_REASON_MAX} characters`,
    }),
  ),
  keepThumbnail: t.Optional(
    t.Boolean({ description: 'Keep the image’s thumbnail with the block, for admins to see (default false)' }),
  ),
})

export const BlockResponse = t.Object({ success: t.Literal(true), block: AdminBlock })
