import { thumbnailSize } from '../../media/thumbnail'
import { html, type SafeHtml } from '../../web/html'
import type { PictureSite } from '../images/links'
import { type PictureImage, tilePicture } from './picture'

/** Tiles loaded at once: the first rows, in view on arrival (2 to 5 a row); the others load as they scroll in. */
const EAGER_TILES = 6

/** One thumbnail of a grid (gallery, profile, album). */
export interface Tile {
  image: PictureImage
  viewer: string
  /** The upload-time thumbnail: a hidden tile's blurred preview. */
  thumbnail: string
  alt: string
  /** Mature (or not yet scanned): blurred behind a badge, with a button that reveals it. */
  hidden: boolean
  /** A line under the thumbnail (already safe HTML). */
  caption?: SafeHtml
}

/**
 * A grid of thumbnails linking to their viewer pages. A hidden tile's thumbnail is not in the markup (site.js loads it
 * from data-preview, blurred by CSS) so link unfurlers never pick it; its Show button unblurs it.
 */
export function thumbGrid(site: PictureSite, tiles: Tile[]): SafeHtml {
  return html`<ul class="grid">
${tiles.map((tile, index) => {
  if (!tile.hidden) {
    return html`<li class="tile"><a class="thumb" href="${tile.viewer}">${tilePicture(site, tile.image, tile.alt, index >= EAGER_TILES)}</a>${tile.caption ?? ''}</li>
`
  }
  const size = thumbnailSize(tile.image.width, tile.image.height)
  return html`<li class="tile nsfw is-hidden"><a class="thumb nsfw-thumb" href="${tile.viewer}"><img data-preview="${tile.thumbnail}" width="${size.width}" height="${size.height}" alt="${tile.alt}"><span class="badge">NSFW</span></a><button type="button" class="reveal" data-reveal aria-label="Show mature image ${tile.alt}">Show</button>${tile.caption ?? ''}</li>
`
})}</ul>`
}

/** How a pager writes one step: a link; a protected album's page posts its password form again (album.ts). */
export type PagerStep = (href: string, rel: 'prev' | 'next', label: string) => SafeHtml
const linkStep: PagerStep = (href, rel, label) =>
  html`<a class="button secondary" rel="${rel}" href="${href}">${label}</a>`

/** Previous / next steps of a paged list; nothing when everything fits on one page. */
export function pager(
  page: number,
  totalPages: number,
  href: (page: number) => string,
  step: PagerStep = linkStep,
): SafeHtml {
  if (totalPages <= 1) return html``
  return html`<nav class="pager" aria-label="Pages">
${page > 1 ? step(href(page - 1), 'prev', '← Newer') : html`<span></span>`}
<span class="muted">Page ${page} of ${totalPages}</span>
${page < totalPages ? step(href(page + 1), 'next', 'Older →') : html`<span></span>`}
</nav>`
}

/**
 * A list's `asOf` from a query string (the pager's links carry it, so paging does not shift): a whole number, undefined
 * when absent, else null (the page answers 404).
 */
export function asOfParam(raw: string | undefined): number | undefined | null {
  if (raw === undefined || raw === '') return undefined
  return /^\d{1,15}$/.test(raw) ? Number(raw) : null
}

/** A page number from a query string: a positive integer, else null (the page answers 404). */
export function pageParam(raw: string | undefined): number | null {
  if (raw === undefined || raw === '') return 1
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) return null
  return Number(raw)
}
