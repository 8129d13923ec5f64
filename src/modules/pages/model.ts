import { t } from 'elysia'

/** The oEmbed endpoint's query and answers (src/modules/pages/oembed.ts makes them). */
const common = {
  version: t.Literal('1.0'),
  title: t.String({ description: 'og:title of the viewer page' }),
  author_name: t.Optional(t.String({ description: 'Only when the embed profile sets it' })),
  author_url: t.Optional(t.String({ format: 'uri', description: 'Only when the embed profile sets it' })),
  provider_name: t.String({ description: 'The site name in force (profile site_name, else SITE_NAME)' }),
  provider_url: t.String({ format: 'uri' }),
}

export const OEmbedPhoto = t.Object(
  {
    ...common,
    type: t.Literal('photo'),
    url: t.String({
      format: 'uri',
      description: 'Direct link; for originals other than JPEG, PNG and GIF, their 1280 px JPEG preset (the og:image)',
    }),
    width: t.Integer(),
    height: t.Integer(),
    thumbnail_url: t.String({
      format: 'uri',
      description: "The thumbnail's size as a JPEG (the medium preset), a format every consumer reads",
    }),
    thumbnail_width: t.Integer(),
    thumbnail_height: t.Integer(),
  },
  { description: 'A photo embed' },
)
export const OEmbedLink = t.Object(
  { ...common, type: t.Literal('link') },
  { description: 'NSFW images: a link embed, without the picture' },
)
export const OEmbedResponse = t.Union([OEmbedPhoto, OEmbedLink])

export const OEmbedQuery = t.Object({
  url: t.String({ description: 'A viewer link, {base_url}/i/<id>' }),
  format: t.Optional(t.String({ description: 'Only json is supported (anything else: 501)' })),
  maxwidth: t.Optional(t.String({ description: 'Accepted and ignored: the photo is always the og:image' })),
  maxheight: t.Optional(t.String({ description: 'Accepted and ignored' })),
})

/** The options of a route kept out of the OpenAPI document: the pages and their assets. */
export const hidden = { detail: { hide: true } }
