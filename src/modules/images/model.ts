import { t } from 'elysia'
import { FILENAME_MAX } from '../../http/multipart'
import { AsOf, AsOfQuery, Nullable, PageQuery, Timestamp, Visibility } from '../../http/schemas'

/**
 * Image ids, and album ids (the same form, DECISIONS.md): 8 random characters of [A-Za-z0-9]. The one home of the
 * pattern: the schemas, the checks, and the routes that find an id inside a path build on it.
 */
export const IMAGE_ID = '[A-Za-z0-9]{8}'
const ID = new RegExp(`^${IMAGE_ID}$`)
export const isImageId = (id: string) => ID.test(id)
export const ImageId = t.String({
  pattern: `^${IMAGE_ID}$`,
  description: '8-character image id',
  examples: ['Ab3dE5gH'],
})

/** Every shape opens with the image's id and its three links. */
const LINKED = ['id', 'url', 'thumbnail', 'viewer'] as const

/**
 * The fields of an image each response shows (INTERFACE.md), in the order it shows them: the one list per shape.
 * `imageFields` (view.ts) maps an image to every field once; each answer picks its shape from here.
 */
export const IMAGE_SHAPES = {
  /** upload answers (with `deleteToken` and `duplicateOf` after them when they apply) */
  uploaded: [...LINKED, 'delete', 'width', 'height', 'size', 'mime', 'visibility', 'nsfw', 'filename', 'expiresAt'],
  /** GET /api/v1/image/:id */
  details: [...LINKED, 'width', 'height', 'size', 'mime', 'views', 'visibility', 'nsfw', 'uploadedAt', 'expiresAt'],
  /** PATCH answers */
  patched: ['id', 'visibility', 'nsfw', 'expiresAt', 'filename'],
  /** the owner's list */
  listItem: [
    ...LINKED,
    'filename',
    'size',
    'width',
    'height',
    'mime',
    'views',
    'visibility',
    'nsfw',
    'created_at',
    'expiresAt',
  ],
  /** gallery, search and profiles */
  galleryItem: [...LINKED, 'width', 'height', 'mime', 'views', 'created_at'],
  /** album pages and the album API */
  albumItem: [...LINKED, 'filename', 'width', 'height', 'size', 'mime', 'views', 'visibility', 'nsfw', 'created_at'],
  /** an admin's report list */
  reported: [...LINKED, 'filename', 'mime', 'width', 'height', 'visibility', 'nsfw', 'createdAt', 'expiresAt'],
  /** webhook and other deliveries */
  delivered: [...LINKED, 'filename', 'width', 'height', 'size', 'mime', 'visibility', 'nsfw', 'created_at'],
} as const

const links = {
  id: ImageId,
  url: t.String({ format: 'uri', description: 'Direct link' }),
  thumbnail: t.String({ format: 'uri' }),
  viewer: t.String({ format: 'uri' }),
}
/** When the image expires (it answers 404 everywhere from then on), or null: never. */
const ExpiresAt = t.Union([Timestamp, t.Null()], {
  description: 'When the image expires and disappears (ISO 8601), or null: never',
})
export const EXPIRES_DESCRIPTION =
  'Expire the image after this long: a positive number of seconds, or an ISO 8601 duration such as PT10M, P7D or P1DT2H ' +
  '(Y = 365 days, M = 30 days). At most MAX_EXPIRY seconds; an expired image answers 404 everywhere and its files are deleted.'
const dimensions = {
  width: t.Integer(),
  height: t.Integer(),
  size: t.Integer({ description: 'Bytes of the stored original' }),
  mime: t.String(),
}

export const UploadedImage = t.Object({
  ...links,
  delete: t.String({ format: 'uri' }),
  ...dimensions,
  visibility: Visibility,
  nsfw: t.Boolean(),
  filename: t.String(),
  expiresAt: ExpiresAt,
  deletePage: t.String({
    format: 'uri',
    description:
      'A page that shows the image with a button that deletes it: no key or session needed, so keep it private (it carries the delete token)',
  }),
  deleteToken: t.Optional(t.String({ description: 'Anonymous uploads only: send as X-Delete-Token to delete' })),
  duplicateOf: t.Optional(
    t.String({
      pattern: `^${IMAGE_ID}$`,
      examples: ImageId.examples,
      description:
        'Informational: the id of a live image of the same account that is perceptually the same picture (same ' +
        'perceptual hash: the same picture re-encoded or resized). The upload is stored all the same.',
    }),
  ),
})

export const UploadSingleResponse = t.Composite([t.Object({ success: t.Literal(true) }), UploadedImage], {
  description: 'One file: a flat object',
})
export const UploadBatchResponse = t.Object(
  { success: t.Literal(true), images: t.Array(UploadedImage) },
  { description: 'Several files: one object per file' },
)
export const UploadResponse = t.Union([UploadSingleResponse, UploadBatchResponse])

export const ImageDetails = t.Object(
  {
    ...links,
    ...dimensions,
    views: t.Integer(),
    visibility: Visibility,
    nsfw: t.Boolean(),
    uploadedAt: Timestamp,
    expiresAt: ExpiresAt,
  },
  // `$id`: a reusable schema of the published OpenAPI document (src/http/openapi-document.ts).
  { $id: 'Image' },
)
export const ImageDetailsResponse = t.Object({ success: t.Literal(true), data: ImageDetails })

export const ImagePatch = t.Object({
  visibility: t.Optional(t.String()),
  nsfw: t.Optional(t.Boolean()),
  expires: t.Optional(
    t.Union([t.String(), t.Integer(), t.Null()], {
      description: 'New expiry counted from now (seconds or an ISO 8601 duration, as on upload), or null: never expire',
    }),
  ),
  filename: t.Optional(
    t.String({
      description: `New name of the image (titles, alt texts, search): 1 to ${FILENAME_MAX} characters, surrounding spaces dropped`,
    }),
  ),
})
export const ImagePatchResponse = t.Object({
  success: t.Literal(true),
  id: ImageId,
  visibility: Visibility,
  nsfw: t.Boolean(),
  expiresAt: ExpiresAt,
  filename: t.String(),
})

export const ImageListItem = t.Object({
  ...links,
  filename: t.String(),
  ...dimensions,
  views: t.Integer(),
  visibility: Visibility,
  nsfw: t.Boolean(),
  created_at: Timestamp,
  expiresAt: ExpiresAt,
})

/**
 * A name filter counts its matches up to this many, newest first in the list's order, and its pages stop there
 * (`capped` says more matched), as search does (SEARCH_SCOPE): a name on most of a million images costs what a rare
 * one does. Uncapped, the matches are few enough to be looked up by rowid and sorted (a few ms).
 */
export const NAME_SCOPE = 1000

export const ImageListResponse = t.Object({
  success: t.Literal(true),
  images: t.Array(ImageListItem),
  total: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  pages: t.Integer(),
  asOf: AsOf,
  capped: t.Optional(
    t.Boolean({
      description: `With q: more than ${NAME_SCOPE} images matched; total and the pages stop at the first ${NAME_SCOPE} in the list's order (narrow q)`,
    }),
  ),
})
/** The orders of an owner's list: by upload date, stored size or views (each either way). */
export const IMAGE_SORTS = ['date', 'size', 'views'] as const

/** The owner's list: the page, a name search and the order (GET /api/v1/images and the dashboard's GET /api/images). */
export const ImageListQuery = t.Object({
  ...PageQuery.properties,
  asOf: AsOfQuery,
  q: t.Optional(
    t.String({ description: `Only images whose filename contains this text (at most ${FILENAME_MAX} characters)` }),
  ),
  sort: t.Optional(
    t.Union(
      IMAGE_SORTS.map((s) => t.Literal(s)),
      { description: 'Order by upload date (the default), stored size or views' },
    ),
  ),
  order: t.Optional(
    t.Union([t.Literal('desc'), t.Literal('asc')], {
      description: 'desc (the default): newest, largest, most viewed first',
    }),
  ),
})

/** The dashboard's listing (JWT): the same parameters, plus optional filters. */
export const OwnImageListQuery = t.Object({
  ...ImageListQuery.properties,
  visibility: t.Optional(Visibility),
  nsfw: t.Optional(
    t.Union([t.Literal('true'), t.Literal('false')], { description: 'true: only NSFW images, false: only the others' }),
  ),
})

export const AccountUsage = t.Object({
  success: t.Literal(true),
  username: t.String(),
  email: t.String(),
  role: t.String(),
  emailVerified: t.Boolean(),
  totalImages: t.Integer(),
  storage: t.Object({ used: t.Integer(), limit: Nullable(t.Integer()), remaining: Nullable(t.Integer()) }),
  limits: t.Object({ maxFileSize: Nullable(t.Integer()), maxFilesPerUpload: Nullable(t.Integer()) }),
  rateLimit: t.Object({
    window: t.String(),
    limit: t.Integer(),
    used: t.Integer(),
    remaining: t.Integer(),
    resetSeconds: t.Integer(),
  }),
})

export const ImageIdParams = t.Object({ id: t.String() })
