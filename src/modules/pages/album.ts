import type { Config } from '../../config'
import type { Album, Image } from '../../db/schema'
import type { RateLimited } from '../../errors'
import { httpErrorOf } from '../../http/errors'
import { html, type SafeHtml } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { albumPath } from '../albums/model'
import { profilePath } from '../gallery/model'
import { pictureSite, readableImage } from '../images/links'
import type { ImageService } from '../images/service'
import { pager, thumbGrid } from './grid'

/**
 * The form of a password-protected album; the title stays hidden until the password is given. `state`: asking (200),
 * after a wrong password (403), or the throttle's 429 (with its Retry-After), which says how long to wait.
 */
export function renderAlbumPassword(pages: PageRenderer, album: Album, state: 'ask' | 'wrong' | RateLimited): Response {
  const throttled = typeof state === 'object' ? httpErrorOf(state) : null
  const seconds = Number(throttled?.headers['Retry-After'] ?? 0)
  const wait = seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`
  return pages.respond({
    title: 'Password required',
    status: throttled ? throttled.status : state === 'wrong' ? 403 : 200,
    headers: throttled?.headers,
    noindex: true,
    body: html`<form class="password-form" method="post" action="${albumPath(album.id)}">
<h1>Password required</h1>
<p class="muted">This album is protected by a password.</p>
<label for="album-password">Password</label>
<input id="album-password" name="password" type="password" required autofocus autocomplete="off">
${state === 'wrong' ? html`<p class="error" role="alert">Wrong password, try again.</p>` : ''}${
  throttled ? html`<p class="error" role="alert">Too many wrong passwords. Try again in ${wait}.</p>` : ''
}
<button type="submit">Open album</button>
</form>`,
  })
}

/** Tiles on one page of an album: divides evenly into rows of 2, 3, 5 and 6. */
export const ALBUM_PAGE_SIZE = 60

/** One page of an album's images, and where it is among them. */
export interface AlbumPage {
  images: Image[]
  /** Images the visitor may see in the whole album. */
  total: number
  page: number
  totalPages: number
}

/**
 * Older and newer pages of an album. A protected album's are buttons that post the password again (as the form did),
 * so it never lands in a link, the address bar or a Referer.
 */
function albumPager(album: Album, at: AlbumPage, password: string | undefined): SafeHtml {
  const href = (n: number) => `${albumPath(album.id)}${n > 1 ? `?page=${n}` : ''}`
  if (album.passwordHash === null || password === undefined) return pager(at.page, at.totalPages, href)
  return pager(
    at.page,
    at.totalPages,
    href,
    (target, rel, label) =>
      html`<form method="post" action="${target}"><input type="hidden" name="password" value="${password}"><button type="submit" class="secondary" rel="${rel}">${label}</button></form>`,
  )
}

export function renderAlbum(
  pages: PageRenderer,
  config: Config,
  deps: { images: ImageService; albumUrl: string; owner: string | null; protectedView: boolean; password?: string },
  album: Album,
  at: AlbumPage,
): Response {
  const { images } = deps
  const items = at.images
  // Mature images, and those still waiting for a scan verdict, are blurred here and never used as the preview.
  const hidden = (image: Image) => image.nsfw || image.scanStatus === 'pending'
  const preview = items.find((image) => !hidden(image))
  const previewImage = preview ? readableImage(pictureSite(config), preview, 'unfurler') : null
  const count = `${at.total} image${at.total === 1 ? '' : 's'}`
  const description = album.description || count

  const head = html`<meta name="description" content="${description}">
<meta property="og:type" content="website">
<meta property="og:title" content="${album.title}">
<meta property="og:description" content="${description}">
<meta property="og:site_name" content="${config.site.name}">
<meta property="og:url" content="${deps.albumUrl}">
${
  previewImage
    ? html`<meta property="og:image" content="${previewImage.url}">
<meta property="og:image:type" content="${previewImage.mime}">
<meta property="og:image:width" content="${previewImage.width}">
<meta property="og:image:height" content="${previewImage.height}">
`
    : ''
}<meta name="theme-color" content="${config.site.color}">
<meta name="twitter:card" content="${preview ? 'summary_large_image' : 'summary'}">`

  const grid = items.length
    ? thumbGrid(
        pictureSite(config),
        items.map((image) => {
          const links = images.links(image)
          return {
            image,
            viewer: links.viewer,
            thumbnail: links.thumbnail,
            alt: image.filename,
            hidden: hidden(image),
          }
        }),
      )
    : html`<p class="muted">This album is empty.</p>`
  const paged = html`${grid}
${albumPager(album, at, deps.password)}`

  const body = html`<section class="album-head">
<h1>${album.title}</h1>
${album.description ? html`<p>${album.description}</p>` : ''}
<p class="muted">${count}${deps.owner ? html` · by <a href="${profilePath(deps.owner)}">${deps.owner}</a>` : ''}</p>
</section>
${paged}`

  return pages.respond({
    title: `${album.title} · ${config.site.name}`,
    head,
    body,
    noindex: deps.protectedView,
    bodyClass: 'album-page',
  })
}
