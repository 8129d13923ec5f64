import { FORMATS } from '../../media/formats'
import { fitWithin, thumbnailSize } from '../../media/thumbnail'
import { html, type SafeHtml } from '../../web/html'
import { type PictureImage, type PictureSite, presetUrl, readableImage } from '../images/links'
import { FORMAT_MIME, PRESETS, type Preset, presetMade } from '../variants/specs'

export type { PictureImage } from '../images/links'

/**
 * GIF and WebP originals may be animated (rows from before migration 0017 do not record it): only WebP presets keep
 * the frames.
 */
const MAY_BE_ANIMATED = new Set([FORMATS.gif.mime, FORMATS.webp.mime])

/** The viewer's widest image box (main is at most 1100 px wide, less its padding) and a grid tile's width (site.css). */
const VIEWER_MAX_WIDTH = 1040
const TILE_SIZES = '(max-width: 640px) 50vw, 260px'

/**
 * How wide the viewer shows an image: its own width up to the page's, the window's when narrower. The viewer's CSS
 * sizes the image by its intrinsic width, which a srcset entry gives as the `sizes` width: a larger one would enlarge it.
 */
function viewerSizes(width: number) {
  const shown = Math.min(width, VIEWER_MAX_WIDTH)
  return `(max-width: ${shown}px) 100vw, ${shown}px`
}

/**
 * The presets worth offering for an image with their real widths, smallest first, up to the first that holds the
 * whole original: presets are never enlarged, so a larger one would be the same pixels again.
 */
function presetWidths(image: { width: number; height: number }) {
  const widths: { preset: Preset; width: number }[] = []
  for (const preset of Object.keys(PRESETS) as Preset[]) {
    const size = fitWithin(PRESETS[preset], image.width, image.height)
    // A very tall image can be as narrow in two presets; a srcset names a width once (the larger preset is taller).
    if (widths.at(-1)?.width === size.width) widths.pop()
    widths.push({ preset, width: size.width })
    if (size.width === image.width && size.height === image.height) break
  }
  return widths
}

/**
 * One `<source>` per format, each listing the presets by width; the browser takes the first type it reads. A preset
 * that would cost too much to make (a long animation's WebP: src/media/work.ts) is left out.
 */
function sources(site: PictureSite, image: PictureImage, formats: ('avif' | 'webp')[], sizes: string): SafeHtml {
  const widths = presetWidths(image)
  return html`${formats.map((format) => {
    const made = widths.filter((w) => presetMade(image, w.preset, format, site.maxPixels))
    const srcset = made.map((w) => `${presetUrl(site.cdnBase, image.id, w.preset, format)} ${w.width}w`).join(', ')
    return html`<source type="${FORMAT_MIME[format]}" srcset="${srcset}" sizes="${sizes}">`
  })}`
}

/**
 * The viewer's image: the first thing on the page, so fetched at once and first. AVIF then WebP presets up to 1280 px,
 * the original (or its JPEG preset where browsers cannot show it) for browsers that read neither. An animation keeps
 * showing the original (only it and the WebP presets have the frames, and the page's point is to show it whole); an
 * SVG scales by itself.
 */
export function viewerPicture(site: PictureSite, image: PictureImage & { ext: string }, alt: string): SafeHtml {
  const shown = readableImage(site, image, 'browser')
  const img = html`<img src="${shown.url}" width="${image.width}" height="${image.height}" loading="eager" fetchpriority="high" alt="${alt}">`
  if (MAY_BE_ANIMATED.has(image.mime) || image.mime === FORMATS.svg.mime) return img
  return html`<picture>${sources(site, image, ['avif', 'webp'], viewerSizes(image.width))}${img}</picture>`
}

/**
 * A grid tile's image, sized as the medium preset (the upload-time thumbnail) so the grid does not move while it
 * loads. Animations get WebP presets only (AVIF presets are their first frame); the medium JPEG is the fallback.
 * Tiles below the first rows load lazily.
 */
export function tilePicture(site: PictureSite, image: PictureImage, alt: string, lazy: boolean): SafeHtml {
  const size = thumbnailSize(image.width, image.height)
  const formats: ('avif' | 'webp')[] = MAY_BE_ANIMATED.has(image.mime) ? ['webp'] : ['avif', 'webp']
  return html`<picture>${sources(site, image, formats, TILE_SIZES)}<img src="${presetUrl(site.cdnBase, image.id, 'medium', 'jpg')}" width="${size.width}" height="${size.height}" loading="${lazy ? 'lazy' : 'eager'}" decoding="async" alt="${alt}"></picture>`
}
