import { t } from 'elysia'
import type { Config } from '../../config'
import { thumbnailSize } from '../../media/thumbnail'
import { pictureSite, presetUrl, readableImage } from '../images/links'
import type { ImagePageData } from './service'

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

/** The oEmbed answer of a viewer link; its title, author and provider match the page's head. */
export function oembedFor(config: Config, data: ImagePageData) {
  const { image, embed } = data
  const photo = readableImage(pictureSite(config), image, 'unfurler')
  const base = {
    version: '1.0' as const,
    title: embed.title,
    ...(embed.authorName ? { author_name: embed.authorName } : {}),
    ...(embed.authorUrl ? { author_url: embed.authorUrl } : {}),
    provider_name: embed.siteName,
    provider_url: config.publicUrl,
  }
  // Like the page, which carries no og:image for them, mature images unfurl without the picture.
  if (image.nsfw) return { ...base, type: 'link' as const }
  const thumb = thumbnailSize(image.width, image.height)
  return {
    ...base,
    type: 'photo' as const,
    url: photo.url,
    width: photo.width,
    height: photo.height,
    // The thumbnail itself is WebP, which not every oEmbed consumer reads: its JPEG twin, the medium preset.
    thumbnail_url: presetUrl(config.cdnUrl, image.id, 'medium', 'jpg'),
    thumbnail_width: thumb.width,
    thumbnail_height: thumb.height,
  }
}
