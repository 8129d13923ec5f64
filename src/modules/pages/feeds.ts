import type { Config } from '../../config'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { MAX_QUERY_LENGTH, profilePath } from '../gallery/model'
import type { GalleryService } from '../gallery/service'
import { pictureSite } from '../images/links'
import { pager, type Tile, thumbGrid } from './grid'
import type { PageService } from './service'

/** Page size of the gallery and profile pages: divides evenly into rows of 2, 3, 5 and 6. */
const FEED_PAGE_SIZE = 30

type FeedImage = Awaited<ReturnType<GalleryService['gallery']>>['images'][number]

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
const dateText = (iso: string) => iso.slice(0, 10)

async function tiles(pages: PageService, items: FeedImage[], opts: { byline: boolean }): Promise<Tile[]> {
  const facts = await pages.tileFacts(items.map((i) => i.id))
  // An image gone since the feed was read keeps the feed's own fields: its links answer 404 whatever they are.
  return items.map((image) => ({
    image: { frames: 1, filterPasses: 0, ...image, ...facts.get(image.id) },
    viewer: image.viewer,
    thumbnail: image.thumbnail,
    alt: facts.get(image.id)?.filename ?? `Image ${image.id}`,
    hidden: image.nsfw,
    caption: opts.byline
      ? html`<p class="tile-meta">${image.username ? html`<a href="${profilePath(image.username)}">${image.username}</a>` : html`<span>anonymous</span>`}<span>${plural(image.views, 'view')}</span></p>`
      : undefined,
  }))
}

/** /gallery and /gallery?q=: the public gallery (or a search of it), server-rendered, paged by links. */
export async function renderGallery(
  renderer: PageRenderer,
  config: Config,
  deps: { gallery: GalleryService; pages: PageService },
  opts: { page: number; q: string; asOf?: number },
): Promise<Response> {
  const page = { page: opts.page, limit: FEED_PAGE_SIZE, offset: (opts.page - 1) * FEED_PAGE_SIZE, asOf: opts.asOf }
  let result: Awaited<ReturnType<GalleryService['gallery']>> | null = null
  let searchError: string | null = null
  try {
    result = await (opts.q ? deps.gallery.search(opts.q, page) : deps.gallery.gallery(page))
  } catch (error) {
    // A search the API would refuse (no word in it, too long) is explained on the page instead.
    searchError = error instanceof Error ? error.message : 'Invalid search'
  }
  if (result && opts.page > 1 && opts.page > result.totalPages)
    return renderer.notFound('There is no such page of the gallery.')

  // The pager's links keep the list pinned: images uploaded meanwhile do not shift the next page.
  const href = (n: number) => {
    const params = new URLSearchParams()
    if (opts.q) params.set('q', opts.q)
    if (n > 1) params.set('page', String(n))
    if (result) params.set('asOf', String(result.asOf))
    const query = params.toString()
    return `/gallery${query ? `?${query}` : ''}`
  }
  const shown = result?.images.length ? await tiles(deps.pages, result.images, { byline: true }) : []
  const summary = result
    ? opts.q
      ? html`${plural(result.total, 'image')} matching “${opts.q}” · <a href="/gallery">clear</a>`
      : html`${plural(result.total, 'public image')}, newest first`
    : ''

  const body = html`<section class="page-head">
<div>
<h1>Gallery</h1>
<p class="muted">${summary}</p>
</div>
<form class="search" role="search" method="get" action="/gallery">
<label class="visually-hidden" for="gallery-q">Search the gallery</label>
<input id="gallery-q" type="search" name="q" value="${opts.q}" placeholder="Search by name or album" maxlength="${MAX_QUERY_LENGTH}">
<button type="submit" class="secondary">Search</button>
</form>
</section>
${searchError ? html`<p class="error" role="alert">${searchError}</p>` : ''}
${
  result?.images.length
    ? html`${thumbGrid(pictureSite(config), shown)}
${pager(result.page, result.totalPages, href)}`
    : result
      ? html`<section class="notice"><p class="muted">${opts.q ? 'Nothing matches this search.' : 'No public images yet.'}</p><p><a class="button" href="/">Upload the first one</a></p></section>`
      : ''
}`

  return renderer.respond({
    title: opts.q ? `“${opts.q}” · Gallery · ${config.site.name}` : `Gallery · ${config.site.name}`,
    head: html`<meta name="description" content="Public images on ${config.site.name}">`,
    body,
    // Search result pages are endless variations: keep them out of indexes.
    noindex: !!opts.q,
    bodyClass: 'gallery-page',
  })
}

/** /u/<username>: a user's public images; mature ones blurred behind a Show button. Unknown or banned: 404 page. */
export async function renderProfile(
  renderer: PageRenderer,
  config: Config,
  deps: { gallery: GalleryService; pages: PageService },
  username: string,
  at: { page: number; asOf?: number },
): Promise<Response> {
  const pageNumber = at.page
  let result: Awaited<ReturnType<GalleryService['profile']>>
  try {
    result = await deps.gallery.profile(username, {
      page: pageNumber,
      limit: FEED_PAGE_SIZE,
      offset: (pageNumber - 1) * FEED_PAGE_SIZE,
      asOf: at.asOf,
    })
  } catch {
    return renderer.notFound('There is no user with this name.')
  }
  if (pageNumber > 1 && pageNumber > result.totalPages)
    return renderer.notFound('There is no such page of this profile.')
  const { user } = result
  const profileUrl = `${config.site.publicUrl}${profilePath(user.username)}`
  const href = (n: number) => `${profilePath(user.username)}?${n > 1 ? `page=${n}&` : ''}asOf=${result.asOf}`
  const shown = await tiles(deps.pages, result.images, { byline: false })

  const body = html`<section class="profile-head">
<div class="avatar" aria-hidden="true">${user.username.slice(0, 1).toUpperCase()}</div>
<div>
<h1>${user.username}</h1>
<p class="muted">${plural(user.publicImages, 'public image')} · joined <time datetime="${user.createdAt}">${dateText(user.createdAt)}</time></p>
</div>
</section>
${
  result.images.length
    ? html`${thumbGrid(pictureSite(config), shown)}
${pager(result.page, result.totalPages, href)}`
    : html`<p class="muted">No public images yet.</p>`
}`

  return renderer.respond({
    title: `${user.username} · ${config.site.name}`,
    head: html`<meta name="description" content="${plural(user.publicImages, 'public image')} by ${user.username}">
<meta property="og:type" content="profile">
<meta property="og:title" content="${user.username}">
<meta property="og:site_name" content="${config.site.name}">
<meta property="og:url" content="${profileUrl}">
<link rel="canonical" href="${profileUrl}">`,
    body,
    bodyClass: 'profile-page',
  })
}
