import { t } from 'elysia'
import { Timestamp, Visibility } from '../../http/schemas'
import { ImageId, isImageId } from '../images/model'

/** Album ids take the image id's form (DECISIONS.md). */
export const isAlbumId = isImageId
export const TITLE_MAX = 100
/** An album page's path, `/a/<id>`. */
export const albumPath = (id: string) => `/a/${id}`
export const DESCRIPTION_MAX = 1000
export const PASSWORD_MAX = 256

export const AlbumModel = t.Object(
  {
    id: t.String({ description: '8-character album id', examples: ['Xy7kLm2Q'] }),
    title: t.String(),
    description: t.String(),
    isPublic: t.Boolean(),
    hasPassword: t.Boolean(),
    imageCount: t.Integer({ description: 'Images the caller can see (others: public images only)' }),
    cover: t.Union([t.String({ format: 'uri' }), t.Null()], {
      description: 'Thumbnail link of the image added most recently, or null',
    }),
    url: t.String({ format: 'uri', description: 'The album page, {base_url}/a/<id>' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Album' },
)

export const AlbumImage = t.Object({
  id: ImageId,
  url: t.String({ format: 'uri' }),
  thumbnail: t.String({ format: 'uri' }),
  viewer: t.String({ format: 'uri' }),
  filename: t.String(),
  width: t.Integer(),
  height: t.Integer(),
  size: t.Integer(),
  mime: t.String(),
  views: t.Integer(),
  visibility: Visibility,
  nsfw: t.Boolean(),
  created_at: Timestamp,
})

export const AlbumCreateBody = t.Object({
  title: t.String({ minLength: 1, maxLength: TITLE_MAX, description: `1-${TITLE_MAX} characters` }),
  description: t.Optional(
    t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()], {
      description: `At most ${DESCRIPTION_MAX} characters`,
      error: `description must be at most ${DESCRIPTION_MAX} characters`,
    }),
  ),
  isPublic: t.Optional(t.Boolean({ description: 'Default false' })),
})

export const AlbumUpdateBody = t.Object(
  {
    title: t.Optional(t.String({ minLength: 1, maxLength: TITLE_MAX })),
    description: t.Optional(
      t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()], {
        error: `description must be at most ${DESCRIPTION_MAX} characters`,
      }),
    ),
    isPublic: t.Optional(t.Boolean()),
    password: t.Optional(
      t.Union([t.String({ maxLength: PASSWORD_MAX }), t.Null()], {
        description: 'A string sets the password (hashed); null or "" removes it',
        error: `password must be a string of at most ${PASSWORD_MAX} characters, or null`,
      }),
    ),
  },
  { description: 'Partial update: at least one field; omitted fields stay unchanged' },
)

export const AlbumResponse = t.Object({ success: t.Literal(true), album: AlbumModel })
export const AlbumListResponse = t.Object({ success: t.Literal(true), albums: t.Array(AlbumModel) })
export const AlbumViewResponse = t.Object({ success: t.Literal(true), album: AlbumModel, images: t.Array(AlbumImage) })
export const AlbumIdParams = t.Object({ id: t.String() })
/** `:id` is the album (INTERFACE.md's `:albumId`; the router needs one name per position). */
export const AlbumImageParams = t.Object({ id: t.String(), imageId: t.String() })
export const AlbumViewQuery = t.Object({
  password: t.Optional(t.String({ description: 'Album password (or header X-Album-Password)' })),
})
/** Other headers must survive validation: the optional session reads Authorization. */
export const AlbumViewHeaders = t.Object(
  { 'x-album-password': t.Optional(t.String({ description: 'Password of a protected public album (or ?password=)' })) },
  { additionalProperties: true },
)
export const AddImageBody = t.Object({ imageId: t.String({ description: 'Short id of one of your images' }) })
