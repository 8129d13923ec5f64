import { t } from 'elysia'
import { ImageId, PageQuery, Timestamp, Visibility } from '../../http/schemas'

const links = {
  id: ImageId,
  url: t.String({ format: 'uri', description: 'Direct link' }),
  thumbnail: t.String({ format: 'uri' }),
  viewer: t.String({ format: 'uri' }),
}
const dimensions = { width: t.Integer(), height: t.Integer(), size: t.Integer({ description: 'Bytes of the stored original' }), mime: t.String() }

export const UploadedImage = t.Object({
  ...links,
  delete: t.String({ format: 'uri' }),
  ...dimensions,
  visibility: Visibility,
  nsfw: t.Boolean(),
  filename: t.String(),
  deleteToken: t.Optional(t.String({ description: 'Anonymous uploads only: send as X-Delete-Token to delete' })),
})

export const UploadSingleResponse = t.Composite([t.Object({ success: t.Literal(true) }), UploadedImage], {
  description: 'One file: a flat object',
})
export const UploadBatchResponse = t.Object(
  { success: t.Literal(true), images: t.Array(UploadedImage) },
  { description: 'Several files: one object per file' },
)
export const UploadResponse = t.Union([UploadSingleResponse, UploadBatchResponse])

/** Multipart fields, for the OpenAPI document (the body itself is streamed, not parsed by the framework). */
export const UploadForm = t.Object({
  file: t.Array(t.File(), { description: 'One or more image files' }),
  visibility: t.Optional(Visibility),
  private: t.Optional(t.String({ description: 'true/1/yes/on: shorthand for visibility=private' })),
  nsfw: t.Optional(t.String({ description: 'true flags the upload as NSFW' })),
  album: t.Optional(t.String({ description: 'Album id, or a folder name created on first use' })),
  folder: t.Optional(t.String({ description: 'Alias of album' })),
})

export const ImageDetails = t.Object({
  ...links,
  ...dimensions,
  views: t.Integer(),
  visibility: Visibility,
  nsfw: t.Boolean(),
  uploadedAt: Timestamp,
})
export const ImageDetailsResponse = t.Object({ success: t.Literal(true), data: ImageDetails })

export const ImagePatch = t.Object({ visibility: t.Optional(t.String()), nsfw: t.Optional(t.Boolean()) })
export const ImagePatchResponse = t.Object({ success: t.Literal(true), id: ImageId, visibility: Visibility, nsfw: t.Boolean() })

export const ImageListItem = t.Object({
  ...links,
  filename: t.String(),
  ...dimensions,
  views: t.Integer(),
  visibility: Visibility,
  nsfw: t.Boolean(),
  created_at: Timestamp,
})
export const ImageListResponse = t.Object({
  success: t.Literal(true),
  images: t.Array(ImageListItem),
  total: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  pages: t.Integer(),
})
export const ImageListQuery = PageQuery

const Nullable = <T extends import('@sinclair/typebox').TSchema>(s: T) => t.Union([s, t.Null()])
export const AccountUsage = t.Object({
  success: t.Literal(true),
  username: t.String(),
  email: t.String(),
  role: t.String(),
  emailVerified: t.Boolean(),
  totalImages: t.Integer(),
  storage: t.Object({ used: t.Integer(), limit: Nullable(t.Integer()), remaining: Nullable(t.Integer()) }),
  limits: t.Object({ maxFileSize: Nullable(t.Integer()), maxFilesPerUpload: Nullable(t.Integer()) }),
  rateLimit: t.Object({ window: t.String(), limit: t.Integer(), used: t.Integer(), remaining: t.Integer(), resetSeconds: t.Integer() }),
})

export const ImageIdParams = t.Object({ id: t.String() })
