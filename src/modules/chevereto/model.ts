import { t } from 'elysia'

/** `json`: the answer object; `txt`: the direct link as text; `redirect`: 303 to the viewer page. */
export const CHEVERETO_FORMATS = ['json', 'txt', 'redirect'] as const
export type CheveretoFormat = (typeof CHEVERETO_FORMATS)[number]

const fieldDescriptions = {
  key: {
    type: 'string',
    description: 'API key (or send it as ?key= or the X-API-Key header); anywhere in the form',
  },
  action: { type: 'string', description: 'Accepted and ignored (always upload)' },
  format: { type: 'string', enum: [...CHEVERETO_FORMATS], default: 'json' },
  album_id: { type: 'string', description: 'Album id, or a folder name created on first use (our `album`)' },
  nsfw: { type: 'string', description: '1 or true flags the image as NSFW' },
  expiration: { type: 'string', description: 'Expire after this ISO 8601 duration (PT5M, P1D...): our `expires`' },
  title: { type: 'string', description: 'Ignored (images here have no title)' },
  description: { type: 'string', description: 'Ignored (images here have no description)' },
}

/** The request bodies as OpenAPI sees them; the door reads them itself, bounded (parse: none). */
export const cheveretoBody = {
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['source'],
        properties: {
          source: {
            type: 'string',
            format: 'binary',
            description: 'The image: a file, or its base64 (a data-URL prefix is tolerated)',
          },
          ...fieldDescriptions,
        },
      },
    },
    'application/x-www-form-urlencoded': {
      schema: {
        type: 'object',
        required: ['source'],
        properties: { source: { type: 'string', description: 'The image as base64' }, ...fieldDescriptions },
      },
    },
  },
}

export const CheveretoQuery = t.Object({
  key: t.Optional(t.String({ description: 'API key' })),
  format: t.Optional(t.String({ description: 'json (default), txt or redirect' })),
  action: t.Optional(t.String({ description: 'Accepted and ignored' })),
})

/** The GET form: every field in the query, the image as a link in `source`. */
export const CheveretoGetQuery = t.Object({
  ...CheveretoQuery.properties,
  source: t.Optional(
    t.String({ description: 'The image: an http(s) link (fetched like a url of /api/v1/upload), or short base64' }),
  ),
  album_id: t.Optional(t.String({ description: fieldDescriptions.album_id.description })),
  nsfw: t.Optional(t.String({ description: fieldDescriptions.nsfw.description })),
  expiration: t.Optional(t.String({ description: fieldDescriptions.expiration.description })),
})

const Link = t.String({ format: 'uri' })
const Thumb = t.Object({ url: Link, mime: t.String(), extension: t.String() })

export const CheveretoImage = t.Object({
  id_encoded: t.String({ description: 'Our image id' }),
  name: t.String({ description: 'The uploaded file name without its extension' }),
  extension: t.String(),
  filename: t.String(),
  original_filename: t.String(),
  size: t.Integer(),
  width: t.Integer(),
  height: t.Integer(),
  date: t.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
  date_gmt: t.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
  expiration_date_gmt: t.Union([t.String(), t.Null()]),
  mime: t.String(),
  url: Link,
  url_viewer: Link,
  display_url: Link,
  thumb: Thumb,
  medium: Thumb,
  delete_url: t.String({
    format: 'uri',
    description: 'Its delete page: opened in a browser, it deletes the image with one click (keep it private)',
  }),
  nsfw: t.Integer({ description: '1: NSFW' }),
  visibility: t.String(),
})

export const CheveretoSuccess = t.Object(
  {
    status_code: t.Literal(200),
    success: t.Object({ message: t.String(), code: t.Integer() }),
    image: CheveretoImage,
    status_txt: t.String(),
  },
  { description: 'format=json; format=txt answers the direct link as text/plain, format=redirect a 303 to the viewer' },
)

export const CheveretoError = t.Object(
  {
    status_code: t.Integer(),
    error: t.Object({ message: t.String(), code: t.Integer() }, { additionalProperties: true }),
    status_txt: t.String(),
  },
  { description: 'Error, with the status our API gives it' },
)
