import type { Config } from '../../config'
import { FORMATS, type ImageFormat } from '../../media/formats'
import { fitWithin } from '../../media/thumbnail'
import { PRESETS, type Preset, presetMade } from '../variants/specs'

/** A viewer page's path prefix: `/i/<id>`. */
export const VIEWER_PATH = '/i/'

/** The delete page's path prefix: `/delete/<id>/<token>` opens it, a POST to `/delete/<id>` with the token deletes. */
export const DELETE_PAGE_PATH = '/delete/'

/** An upload's delete page link: it carries the image's delete token, so whoever holds it may delete the image. */
export const deletePageUrl = (publicUrl: string, id: string, token: string) =>
  `${publicUrl}${DELETE_PAGE_PATH}${id}/${token}`

/**
 * What a page's pictures need of the configuration: where /cdn links point (CDN_URL, else the public URL), and the
 * pixel limit that sets what a size may cost (a size past it is never linked: src/media/work.ts).
 */
export interface PictureSite {
  cdnBase: string
  maxPixels: number
}
export const pictureSite = (config: Pick<Config, 'site' | 'limits'>): PictureSite => ({
  cdnBase: config.site.cdnUrl,
  maxPixels: config.limits.maxPixels,
})

/** What a page knows of an image to show it: its size, type and what its sizes cost (the row's `frames`, `filterPasses`). */
export interface PictureImage {
  id: string
  mime: string
  width: number
  height: number
  frames: number
  filterPasses: number
}

/** A preset's link, `/cdn/<preset>/<id>.<format>` (src/modules/variants/model.ts lists presets and formats). */
export const presetUrl = (cdnBase: string, id: string, preset: Preset, format: 'webp' | 'avif' | 'jpg' | 'png') =>
  `${cdnBase}/cdn/${preset}/${id}.${format}`

const originalUrl = (cdnBase: string, image: { id: string; ext: string }) => `${cdnBase}/cdn/${image.id}.${image.ext}`

/** The link shapes of INTERFACE.md, defined once. `cdnBase` is where /cdn paths are served from. */
export function imageLinks(base: { publicUrl: string; cdnBase: string }, image: { id: string; ext: string }) {
  return {
    url: originalUrl(base.cdnBase, image),
    thumbnail: presetUrl(base.cdnBase, image.id, 'medium', 'webp'),
    viewer: `${base.publicUrl}${VIEWER_PATH}${image.id}`,
    delete: `${base.publicUrl}/api/v1/image/${image.id}`,
  }
}

export type LinkBase = Parameters<typeof imageLinks>[0]

const mimesOf = (formats: ImageFormat[]) => new Set(formats.map((format) => FORMATS[format].mime))
/**
 * Originals each reader shows as they are: every browser (an `<img>` src), every link unfurler (og:image: Facebook,
 * Discord, Slack, X... read JPEG, PNG and GIF; WebP and AVIF not everywhere). Any other original (TIFF, BMP, ICO,
 * HEIC, ...) is shown through its `large` JPEG preset.
 */
const READABLE = {
  browser: mimesOf(['jpeg', 'png', 'gif', 'webp', 'avif', 'svg']),
  unfurler: mimesOf(['jpeg', 'png', 'gif']),
}

/**
 * The `browser` side of readableImage as data, for the page scripts that fill share codes (site.js `shareFields`): the
 * types shown as they are, and the link of the `large` JPEG preset with `{id}` where the image's id goes.
 */
export const browserPictureRule = (cdnBase: string) => ({
  mimes: [...READABLE.browser],
  fallback: presetUrl(cdnBase, '{id}', 'large', 'jpg'),
})

/**
 * The one rule for which file stands for an image where only a plain link fits (an `<img>` src, og:image, oEmbed):
 * the original when `reader` reads its format, else the `large` JPEG preset (the `medium` one when the large would
 * cost too much to make: an SVG of many filters), with the size and type of what it names.
 */
export function readableImage(site: PictureSite, image: PictureImage & { ext: string }, reader: keyof typeof READABLE) {
  if (READABLE[reader].has(image.mime))
    return { url: originalUrl(site.cdnBase, image), mime: image.mime, width: image.width, height: image.height }
  const preset = presetMade(image, 'large', 'jpg', site.maxPixels) ? 'large' : 'medium'
  const size = fitWithin(PRESETS[preset], image.width, image.height)
  return { url: presetUrl(site.cdnBase, image.id, preset, 'jpg'), mime: 'image/jpeg', ...size }
}
