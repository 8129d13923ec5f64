import type { Config } from '../../config'
import { humanSize } from '../../lib/size'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { profilePath } from '../gallery/model'
import { type PictureSite, pictureSite, readableImage } from '../images/links'
import { viewerPicture } from './picture'
import { reportForm } from './report-form'
import type { ImagePageData } from './service'
import { fillShareCode, SHARE_CODES } from './share-codes'

/** The share codes offered on the viewer page; each is plain text (the page escapes it when it renders it). */
export function shareCodes(site: PictureSite, data: Pick<ImagePageData, 'image' | 'links'>) {
  const values = {
    url: data.links.url,
    img: readableImage(site, data.image, 'browser').url,
    viewer: data.links.viewer,
    alt: data.image.filename,
  }
  return SHARE_CODES.map((code) => ({
    id: `code-${code.key}`,
    label: code.label,
    value: fillShareCode(code.template, values),
  }))
}

const dateText = (date: Date) => `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`

/**
 * The head of a viewer page: Open Graph, Twitter, theme colour and the oEmbed discovery link. A mature image has no
 * og:image and a plain `summary` card, so no preview shows a large (empty) image slot.
 */
function viewerHead(config: Config, data: ImagePageData) {
  const { image, embed, links } = data
  const preview = readableImage(pictureSite(config), image, 'unfurler')
  const oembed = `${config.site.publicUrl}/api/oembed?url=${encodeURIComponent(links.viewer)}`
  return html`<meta name="description" content="${embed.description}">
<meta property="og:type" content="website">
<meta property="og:title" content="${embed.title}">
<meta property="og:description" content="${embed.description}">
<meta property="og:site_name" content="${embed.siteName}">
<meta property="og:url" content="${links.viewer}">
${
  image.nsfw
    ? ''
    : html`<meta property="og:image" content="${preview.url}">
<meta property="og:image:type" content="${preview.mime}">
<meta property="og:image:width" content="${preview.width}">
<meta property="og:image:height" content="${preview.height}">
<meta property="og:image:alt" content="${image.filename}">
`
}<meta name="theme-color" content="${embed.color}">
<meta name="twitter:card" content="${image.nsfw ? 'summary' : 'summary_large_image'}">
<link rel="alternate" type="application/json+oembed" href="${oembed}" title="${embed.title}">
<link rel="canonical" href="${links.viewer}">`
}

export function renderViewer(pages: PageRenderer, config: Config, data: ImagePageData): Response {
  const { image, links, username } = data
  const shown = readableImage(pictureSite(config), image, 'browser')
  // A mature image is not in the markup at all: unfurlers that fall back to the first <img> find nothing to show.
  // site.js loads the thumbnail (blurred by CSS) behind the warning, and the image (its JPEG preset where browsers cannot
  // show the original) once the visitor reveals it.
  const figure = image.nsfw
    ? html`<figure class="viewer nsfw is-hidden">
<a href="${links.url}"><img data-preview="${links.thumbnail}" data-src="${shown.url}" width="${image.width}" height="${image.height}" alt="${image.filename}"></a>
<div class="nsfw-warning"><p>This image is marked as mature content (NSFW).</p><button type="button" data-reveal>Show image</button><noscript><a href="${links.url}">Open the image</a></noscript></div>
</figure>`
    : html`<figure class="viewer"><a href="${links.url}">${viewerPicture(pictureSite(config), image, image.filename)}</a></figure>`

  const body = html`<article class="image-page">
${figure}
<h1>${image.filename}</h1>
<dl class="details">
<div><dt>Dimensions</dt><dd>${image.width} × ${image.height}</dd></div>
<div><dt>Size</dt><dd>${humanSize(image.size)}</dd></div>
<div><dt>Type</dt><dd>${image.mime}</dd></div>
<div><dt>Uploaded</dt><dd><time datetime="${image.createdAt.toISOString()}">${dateText(image.createdAt)}</time></dd></div>
<div><dt>Views</dt><dd>${data.views()}</dd></div>
${username ? html`<div><dt>By</dt><dd><a class="uploader" href="${profilePath(username)}">${username}</a></dd></div>` : ''}
</dl>
<section class="share" aria-label="Share">
${shareCodes(pictureSite(config), data).map(
  (
    code,
  ) => html`<div class="field"><label for="${code.id}">${code.label}</label><div class="copy-row"><input id="${code.id}" type="text" readonly value="${code.value}"><button type="button" class="secondary" data-copy="${code.id}">Copy</button></div></div>
`,
)}</section>
${reportForm(image.id)}
</article>`

  return pages.respond({
    title: data.embed.title,
    head: viewerHead(config, data),
    body,
    // Mature images are kept out of search results as they are kept out of previews.
    noindex: image.visibility === 'private' || image.nsfw,
    bodyClass: 'viewer-page',
    scripts: ['report.js'],
    styles: ['reports.css'],
  })
}
