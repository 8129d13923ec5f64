import type { Config } from '../../config'
import { thumbnailSize } from '../../media/thumbnail'
import { pictureSite, presetUrl, readableImage } from '../images/links'
import type { ImagePageData } from './service'

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
    provider_url: config.site.publicUrl,
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
    thumbnail_url: presetUrl(config.site.cdnUrl, image.id, 'medium', 'jpg'),
    thumbnail_width: thumb.width,
    thumbnail_height: thumb.height,
  }
}
