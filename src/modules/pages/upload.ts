import type { Config } from '../../config'
import { humanSize } from '../../lib/size'
import { FORMATS } from '../../media/formats'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { expiryChoices } from '../images/expiry'
import { listedShareCodes } from './share-codes'

/** Other spellings of an extension, which the file picker offers too. */
const OTHER_SPELLINGS: Record<string, string> = { jpg: 'jpeg', tiff: 'tif', heic: 'heif' }
/** Extensions the file picker offers (the server decides the type from the bytes; this only guides the picker). */
const PICKER_EXTENSIONS = Object.values(FORMATS).flatMap((f) =>
  OTHER_SPELLINGS[f.ext] ? [f.ext, OTHER_SPELLINGS[f.ext]] : [f.ext],
)
// image/heif too: what browsers call a .heif file (detection from the bytes takes both as HEIC).
const ACCEPT = [
  ...Object.values(FORMATS).map((f) => f.mime),
  'image/heif',
  ...PICKER_EXTENSIONS.map((e) => `.${e}`),
].join(',')
const FORMAT_NAMES = 'JPG, PNG, GIF, WebP, SVG, BMP, ICO, TIFF, AVIF, HEIC'

/**
 * Files larger than this go through tus (/api/tus) in 5 MiB chunks instead of one multipart POST: a proxy's body limit
 * or a dropped connection then costs one chunk, not the whole file. Smaller files stay one request each (fewer round trips).
 */
export const TUS_THRESHOLD = 20 * 1024 * 1024

const windowText = (seconds: number) =>
  seconds % 3600 === 0
    ? `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
    : seconds % 60 === 0
      ? `${seconds / 60} minutes`
      : `${seconds} seconds`

/**
 * `/`: the web upload page. The markup is the whole form; upload.js adds drag and drop, paste, the per-file queue with
 * progress bars, and the result links (with tus-upload.js for large files). Limits are written into data attributes
 * (anonymous ones; a logged-in visitor's come from GET /api/account/usage), and so are the format names and the share
 * codes, so the script repeats none of them.
 */
export function renderUploadPage(renderer: PageRenderer, config: Config): Response {
  const anon = config.limits.anonymous
  const anonExpiry = config.expiry.anonDefaultSeconds
  const anonText = `Up to ${anon.maxFiles} file${anon.maxFiles === 1 ? '' : 's'} at a time, ${humanSize(anon.maxFileSize)} each, ${anon.uploads} upload${anon.uploads === 1 ? '' : 's'} per ${windowText(anon.windowSeconds)}.`

  const body = html`<section class="upload" id="upload"
 data-max-files="${anon.maxFiles}" data-max-size="${anon.maxFileSize}" data-tus-threshold="${TUS_THRESHOLD}"
 data-mimes="${Object.values(FORMATS)
   .map((f) => f.mime)
   .join(' ')}" data-extensions="${PICKER_EXTENSIONS.join(' ')}"
 data-format-names="${FORMAT_NAMES}" data-share-codes="${listedShareCodes(config.site.cdnUrl)}">
<h1>Upload images</h1>
<div class="dropzone" id="dropzone">
<p class="drop-title"><strong>Drop images here</strong>, paste them (Ctrl+V), or</p>
<input class="visually-hidden" id="file-input" type="file" name="file" multiple accept="${ACCEPT}">
<label class="button" for="file-input" id="file-label">Choose files</label>
<p class="muted small" id="limits-text" data-anon="${anonText}">${FORMAT_NAMES}. ${anonText}</p>
</div>
<fieldset class="options">
<legend class="visually-hidden">Upload options</legend>
<div class="option-group" role="radiogroup" aria-label="Visibility">
<label><input type="radio" name="visibility" value="public" checked> Public</label>
<label><input type="radio" name="visibility" value="private"> Private <span class="muted small">(link only, not in the gallery)</span></label>
</div>
<label class="option"><input type="checkbox" id="nsfw" name="nsfw" value="true"> Mature content (NSFW)</label>
<div class="option">
<label for="expires-select">Delete after</label>
<select id="expires-select" name="expires"><option value="">${anonExpiry ? `Never (anonymous: ${windowText(anonExpiry)})` : 'Never'}</option>${expiryChoices(config.expiry.maxSeconds).map((c) => html`<option value="${c.value}">${c.label}</option>`)}</select>
</div>
<div class="option" id="album-option" hidden>
<label for="album-select">Album</label>
<select id="album-select" name="album"><option value="">No album</option></select>
</div>
</fieldset>
<p class="muted small" id="account-text">Not logged in: uploads are anonymous. <a href="/login">Log in</a> for higher limits and to manage your images.</p>
<div class="actions">
<button type="button" id="upload-start">Upload</button>
<button type="button" class="secondary" id="upload-clear" hidden>Clear list</button>
</div>
<p id="upload-status" class="status" role="status" aria-live="polite"></p>
<ol class="upload-list" id="upload-list" aria-label="Files"></ol>
<noscript><p class="error">The upload page needs JavaScript. Scripts and tools can use the API instead: see <a href="/swagger">the API documentation</a>.</p></noscript>
</section>`

  return renderer.respond({
    title: `${config.site.name} · Upload images`,
    head: html`<meta name="description" content="Upload images to ${config.site.name} and share them with a link.">
<meta property="og:title" content="${config.site.name}">
<meta property="og:description" content="Upload images and share them with a link.">
<meta property="og:site_name" content="${config.site.name}">`,
    body,
    scripts: ['tus-upload.js', 'upload.js'],
    bodyClass: 'upload-page',
  })
}
