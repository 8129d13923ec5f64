import type { Config } from '../../config'
import type { Image } from '../../db/schema'
import { humanSize } from '../../lib/size'
import { thumbnailSize } from '../../media/thumbnail'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { DELETE_PAGE_PATH, pictureSite } from '../images/links'
import type { ImageService } from '../images/service'
import { tilePicture } from './picture'

/**
 * The delete page's own headers: the link carries the delete token, so neither the image requests (the CDN may be
 * another origin) nor a link followed from the page may send it on as a Referer, and no cache keeps the page.
 */
const PRIVATE_PAGE = { 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' }

/** Why a delete page link does not open: the image is gone, or the token is not the image's. */
const REFUSALS = {
  gone: {
    status: 404,
    title: 'Image not found',
    text: 'This image no longer exists: it was deleted (perhaps with this very link) or it expired. There is nothing left to delete.',
  },
  wrong: {
    status: 404,
    title: 'Link not valid',
    text: 'This delete link is not valid for this image: check that it was copied whole. Nothing was deleted.',
  },
} as const

function respond(pages: PageRenderer, status: number, title: string, body: ReturnType<typeof html>) {
  return pages.respond({ title, status, noindex: true, headers: PRIVATE_PAGE, body })
}

function refusal(pages: PageRenderer, kind: keyof typeof REFUSALS) {
  const { status, title, text } = REFUSALS[kind]
  return respond(
    pages,
    status,
    title,
    html`<section class="notice"><h1>${title}</h1><p>${text}</p><p><a class="button" href="/">Upload an image</a></p></section>`,
  )
}

/**
 * The image as the page shows it: its thumbnail, or for a mature one the viewer's blurred thumbnail behind a Show
 * button (site.js), so opening the link somewhere public shows nothing the owner did not choose to reveal.
 */
function figure(config: Config, images: ImageService, image: Image) {
  if (!image.nsfw)
    return html`<figure class="viewer">${tilePicture(pictureSite(config), image, image.filename, false)}</figure>`
  const { thumbnail } = images.links(image)
  const size = thumbnailSize(image.width, image.height)
  return html`<figure class="viewer nsfw is-hidden">
<img data-preview="${thumbnail}" data-src="${thumbnail}" width="${size.width}" height="${size.height}" alt="${image.filename}">
<div class="nsfw-warning"><p>This image is marked as mature content (NSFW).</p><button type="button" data-reveal>Show image</button></div>
</figure>`
}

/**
 * The page a delete link opens: the image, what it is, and a form that posts the token back (in the body: the page
 * itself is the only credential, no cookie is involved, so another site cannot make a browser delete anything).
 */
function confirmPage(pages: PageRenderer, config: Config, images: ImageService, image: Image, token: string) {
  return respond(
    pages,
    200,
    'Delete this image?',
    html`<section class="notice delete-page">
<h1>Delete this image?</h1>
${figure(config, images, image)}
<p><strong>${image.filename}</strong> · ${image.width} × ${image.height} · ${humanSize(image.size)}</p>
<p>Deleting it removes the image and every link to it at once. This cannot be undone.</p>
<form method="post" action="${DELETE_PAGE_PATH}${image.id}">
<input type="hidden" name="token" value="${token}">
<button type="submit" class="danger">Delete this image</button>
</form>
</section>`,
  )
}

/** GET /delete/<id>/<token>: the confirmation page, or why the link does not open. */
export async function renderDeletePage(
  pages: PageRenderer,
  config: Config,
  images: ImageService,
  id: string,
  token: string,
) {
  const found = await images.deletableBy(id, token)
  return typeof found === 'string' ? refusal(pages, found) : confirmPage(pages, config, images, found, token)
}

/** POST /delete/<id> with the token in the body: deletes the image and says so, or why it could not. */
export async function deleteFromPage(pages: PageRenderer, images: ImageService, id: string, token: string) {
  const found = await images.deletableBy(id, token)
  if (typeof found === 'string') return refusal(pages, found)
  await images.remove(found)
  return respond(
    pages,
    200,
    'Image deleted',
    html`<section class="notice"><h1>Image deleted</h1><p><strong>${found.filename}</strong> and every link to it are gone.</p><p><a class="button" href="/">Upload an image</a></p></section>`,
  )
}
