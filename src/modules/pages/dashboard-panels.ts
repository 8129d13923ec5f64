import type { Config } from '../../config'
import { FILENAME_MAX } from '../../http/multipart'
import { html } from '../../web/html'
import { DESCRIPTION_MAX, PASSWORD_MAX, TITLE_MAX } from '../albums/model'
import { CODE_MAX, KEY_NAME_MAX, PASSKEY_NAME_MAX, PASSWORD_LENGTH } from '../auth/model'
import { COLOR, NAME_MAX, PLACEHOLDERS, TEXT_MAX, URL_MAX } from '../embeds/model'
import { expiryChoices } from '../images/expiry'
import type { IMAGE_SORTS } from '../images/model'

/** The dashboard's panels, one per tab (each filled by its dashboard-<tab>.js), and the cards inside them. */

/** The dashboard's orders of the image list: `<sort>-<order>` as GET /api/images takes them. */
const IMAGE_ORDERS = [
  ['date-desc', 'Newest first'],
  ['date-asc', 'Oldest first'],
  ['size-desc', 'Largest first'],
  ['size-asc', 'Smallest first'],
  ['views-desc', 'Most viewed'],
  ['views-asc', 'Least viewed'],
] as const satisfies readonly (readonly [`${(typeof IMAGE_SORTS)[number]}-${'asc' | 'desc'}`, string])[]

/**
 * Downloads of the server's uploader configs (GET /api/v1/clients/*) for a key whose secret the page knows: shown with
 * a new key's secret, and (from the template) in a key's row where its secret can be pasted.
 */
const clientDownloads = html`<div class="client-downloads" data-client-downloads role="group" aria-label="Uploader configs for this key">
<p>Ready-made uploaders with this key: ShareX on Windows (import the <code>.sxcu</code>), a shell script (<code>sh it FILE</code>), or a Flameshot script (bind it to a key).</p>
<div class="actions">
<label>Visibility <select name="visibility"><option value="">Default</option><option value="public">Public</option><option value="private">Private</option></select></label>
<label>Album <select name="album"><option value="">No album</option></select></label>
</div>
<div class="actions">
<button type="button" data-client="sharex">ShareX config (.sxcu)</button>
<button type="button" class="secondary" data-client="shell">Shell script</button>
<button type="button" class="secondary" data-client="flameshot">Flameshot script</button>
</div>
<p class="status" data-client-status role="status" aria-live="polite"></p>
</div>`

/**
 * Two-factor (TOTP) setup, in a card of its own (dashboard-totp.js): it works in whichever dashboard panel holds it,
 * loading when that panel is shown.
 */
const totpCard = html`<section class="card" id="totp" data-totp aria-labelledby="totp-title">
<h3 id="totp-title">Two-factor authentication</h3>
<p id="totp-status">Loading…</p>
<div class="actions"><button type="button" id="totp-setup" hidden>Set up two-factor</button></div>
<form id="totp-enable-form" hidden>
<p>Scan this QR code with an authenticator app, or type the key into it, then enter the 6-digit code the app shows.</p>
<img id="totp-qr" alt="QR code of your two-factor key" width="200" height="200">
<p>Key: <code id="totp-secret"></code></p>
<label for="totp-enable-code">Code from the app</label>
<input id="totp-enable-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="${CODE_MAX}">
<p class="error" data-form-error role="alert" hidden></p>
<div class="actions"><button type="submit">Turn on two-factor</button><button type="button" class="secondary" id="totp-cancel">Cancel</button></div>
</form>
<div id="totp-recovery" tabindex="-1" hidden>
<p><strong>Your recovery codes.</strong> Each signs you in once if you lose your device. Save them now: they are not shown again.</p>
<ul id="totp-recovery-list" aria-label="Recovery codes"></ul>
<div class="actions"><button type="button" id="totp-recovery-done">I saved them</button></div>
</div>
<form id="totp-disable-form" hidden>
<label for="totp-disable-code">Code from the app, or a recovery code</label>
<input id="totp-disable-code" name="code" type="text" autocomplete="one-time-code" required maxlength="${CODE_MAX}">
<p class="error" data-form-error role="alert" hidden></p>
<div class="actions"><button type="submit" class="danger">Turn off two-factor</button></div>
</form>
<p class="status" id="totp-action-status" role="status" aria-live="polite"></p>
</section>`
/** The "Password and sessions" section (dashboard-sessions.js): change the password, list and end sessions. */
const passwordAndSessions = html`<div class="card" id="sessions-section" aria-labelledby="sessions-title">
<h3 id="sessions-title">Password and sessions</h3>
<form class="form-grid" id="password-form">
<label for="current-password">Current password</label>
<input id="current-password" name="currentPassword" type="password" autocomplete="current-password" required maxlength="${PASSWORD_LENGTH.max}">
<label for="new-password">New password</label>
<input id="new-password" name="newPassword" type="password" autocomplete="new-password" required minlength="${PASSWORD_LENGTH.min}" maxlength="${PASSWORD_LENGTH.max}" aria-describedby="new-password-hint">
<p class="muted small" id="new-password-hint">At least ${PASSWORD_LENGTH.min} characters. Every other session ends; this one stays.</p>
<p class="error" data-form-error role="alert" hidden></p>
<div class="actions"><button type="submit">Change password</button></div>
</form>
<p class="status" id="password-status" role="status" aria-live="polite"></p>
<h4>Where you are logged in</h4>
<p class="muted">Each login lasts 7 days unless it is ended here, by logging out, or by a password change or reset.</p>
<ul class="rows" id="session-list" aria-label="Your sessions"></ul>
<p class="status" id="sessions-status" role="status" aria-live="polite"></p>
<div class="actions"><a class="button secondary" href="/logout">Log out</a></div>
</div>`

/** The "Your images" tab (dashboard-images.js): filters, bulk changes, the grid and the image dialog. */
export const imagesPanel = (
  config: Config,
) => html`<section class="panel" id="panel-images" data-panel="images" aria-labelledby="images-title">
<h2 id="images-title">Your images</h2>
<div class="toolbar">
<label>Visibility <select id="filter-visibility"><option value="">All</option><option value="public">Public</option><option value="private">Private</option></select></label>
<label>Content <select id="filter-nsfw"><option value="">All</option><option value="false">Safe</option><option value="true">NSFW</option></select></label>
<label>Search <input type="search" id="filter-name" maxlength="${FILENAME_MAX}" placeholder="File name"></label>
<label>Sort <select id="sort-images">${IMAGE_ORDERS.map(([value, label]) => html`<option value="${value}">${label}</option>`)}</select></label>
<label class="check"><input type="checkbox" id="select-all"> Select all on this page</label>
</div>
<div class="bulkbar" id="bulkbar" role="group" aria-label="Change the selected images">
<span class="selected-count" id="selected-count">0 selected</span>
<button type="button" class="secondary" data-bulk="public">Make public</button>
<button type="button" class="secondary" data-bulk="private">Make private</button>
<button type="button" class="secondary" data-bulk="nsfw">Mark NSFW</button>
<button type="button" class="secondary" data-bulk="sfw">Unmark NSFW</button>
<span class="inline-field"><label class="visually-hidden" for="bulk-album">Album</label><select id="bulk-album"><option value="">Choose an album…</option></select><button type="button" class="secondary" data-bulk="album">Add to album</button></span>
<span class="inline-field"><label class="visually-hidden" for="bulk-embed">Embed profile</label><select id="bulk-embed"><option value="">Default embed</option></select><button type="button" class="secondary" data-bulk="embed">Set embed</button></span>
<button type="button" class="danger" data-bulk="delete">Delete</button>
</div>
<p class="status" id="images-status" role="status" aria-live="polite"></p>
<ul class="grid dash-grid" id="image-grid" aria-label="Your images"></ul>
<nav class="pager" id="image-pager" aria-label="Pages of your images"></nav>
<dialog class="card image-dialog" id="image-dialog" aria-labelledby="image-dialog-title">
<h3 id="image-dialog-title"></h3>
<div class="share" id="image-dialog-codes"></div>
<form class="form-inline" id="rename-form">
<label for="rename-input">Name</label>
<input id="rename-input" name="filename" type="text" required maxlength="${FILENAME_MAX}">
<button type="submit">Rename</button>
</form>
<form class="form-inline" id="expiry-form">
<label for="expiry-select">Delete after</label>
<select id="expiry-select" name="expires"><option value="never">Never</option>${expiryChoices(config.expiry.maxSeconds).map((c) => html`<option value="${c.value}">${c.label} from now</option>`)}</select>
<button type="submit">Set expiry</button>
<p class="muted small" id="image-dialog-expiry"></p>
</form>
<p class="status" id="image-dialog-status" role="status" aria-live="polite"></p>
<form method="dialog" class="actions"><button class="secondary">Close</button></form>
</dialog>
</section>`

/** The "Albums" tab (dashboard-albums.js): create, list and edit albums. */
export const albumsPanel = html`<section class="panel" id="panel-albums" data-panel="albums" aria-labelledby="albums-title" hidden>
<h2 id="albums-title">Albums</h2>
<form class="card form-grid" id="album-create">
<h3>New album</h3>
<label for="album-title">Title</label>
<input id="album-title" name="title" type="text" required maxlength="${TITLE_MAX}">
<label for="album-description">Description</label>
<textarea id="album-description" name="description" maxlength="${DESCRIPTION_MAX}" rows="2"></textarea>
<label class="check"><input type="checkbox" name="isPublic"> Public: anyone with the link can view it</label>
<p class="error" data-form-error role="alert" hidden></p>
<div class="actions"><button type="submit">Create album</button></div>
</form>
<p class="status" id="albums-status" role="status" aria-live="polite"></p>
<ul class="rows" id="album-list" aria-label="Your albums"></ul>
<template id="album-edit-template">
<form class="form-grid album-edit">
<label>Title <input name="title" type="text" required maxlength="${TITLE_MAX}"></label>
<label>Description <textarea name="description" maxlength="${DESCRIPTION_MAX}" rows="2"></textarea></label>
<label class="check"><input type="checkbox" name="isPublic"> Public</label>
<label>New password <input name="password" type="password" autocomplete="new-password" maxlength="${PASSWORD_MAX}" placeholder="Leave empty to keep"></label>
<label class="check"><input type="checkbox" name="removePassword"> Remove the password</label>
<p class="error" data-form-error role="alert" hidden></p>
<div class="actions"><button type="submit">Save</button><button type="button" class="secondary" data-cancel>Cancel</button></div>
</form>
</template>
</section>`

/** The "API keys" tab (dashboard-keys.js): create a key, shown once with its uploader configs, and list keys. */
export const keysPanel = html`<section class="panel" id="panel-keys" data-panel="keys" aria-labelledby="keys-title" hidden>
<h2 id="keys-title">API keys</h2>
<p class="muted">Keys let tools such as ShareX, scripts and bots upload with your account (header <code>X-API-Key</code>). See <a href="/swagger">the API documentation</a>.</p>
<form class="card form-inline" id="key-create">
<label for="key-name">Name</label>
<input id="key-name" name="name" type="text" required maxlength="${KEY_NAME_MAX}" placeholder="ShareX on my laptop">
<button type="submit">Create key</button>
<p class="error" data-form-error role="alert" hidden></p>
</form>
<div class="card secret" id="key-secret" hidden tabindex="-1" aria-labelledby="key-secret-title">
<h3 id="key-secret-title">Your new key: <span id="key-secret-name"></span></h3>
<p><strong>Copy it now: it is shown only once.</strong> Only a hash is stored; if you lose it, create a new key.</p>
<div class="copy-row"><label class="visually-hidden" for="new-key">API key</label><input id="new-key" type="text" readonly><button type="button" class="secondary" data-copy="new-key">Copy</button></div>
${clientDownloads}
<div class="actions"><button type="button" class="secondary" id="key-secret-done">Done</button></div>
</div>
<ul class="rows" id="key-list" aria-label="Your API keys"></ul>
<template id="client-downloads-template">${clientDownloads}</template>
</section>`

/** The "Embed profiles" tab (dashboard-embeds.js): the profile form beside its chat preview, and the list. */
export const embedsPanel = (
  config: Config,
) => html`<section class="panel" id="panel-embeds" data-panel="embeds" aria-labelledby="embeds-title" hidden>
<h2 id="embeds-title">Embed profiles</h2>
<p class="muted">How your image links look when they are posted in chat apps and social media. <span id="embed-count"></span></p>
<div class="embed-editor">
<form class="card form-grid" id="embed-form">
<h3 id="embed-form-title">New profile</h3>
<label for="embed-name">Name</label>
<input id="embed-name" name="name" type="text" required maxlength="${NAME_MAX}" placeholder="Work screenshots">
<label for="embed-site_name">Site name</label>
<input id="embed-site_name" name="site_name" type="text" maxlength="${TEXT_MAX.site_name}" placeholder="${config.site.name}">
<label for="embed-author_name">Author</label>
<input id="embed-author_name" name="author_name" type="text" maxlength="${TEXT_MAX.author_name}" placeholder="None, e.g. {username}">
<label for="embed-author_url">Author link</label>
<input id="embed-author_url" name="author_url" type="url" maxlength="${URL_MAX}" placeholder="None, e.g. https://example.com">
<label for="embed-title">Title</label>
<input id="embed-title" name="title" type="text" maxlength="${TEXT_MAX.title}" placeholder="{filename}">
<label for="embed-description">Description</label>
<textarea id="embed-description" name="description" maxlength="${TEXT_MAX.description}" rows="3" placeholder="{width}×{height} · {size}"></textarea>
<label for="embed-color">Colour</label>
<span class="color-row"><input id="embed-color-picker" type="color" value="${config.site.color}" aria-label="Pick a colour"><input id="embed-color" name="color" type="text" maxlength="7" pattern="${COLOR}" placeholder="${config.site.color}"></span>
<p class="muted small">Placeholders, filled per image: <code>${PLACEHOLDERS.map((p) => `{${p}}`).join(' ')}</code>. Empty fields use the defaults.</p>
<p class="error" data-form-error role="alert" hidden></p>
<div class="actions"><button type="submit" id="embed-submit">Create profile</button><button type="button" class="secondary" id="embed-cancel" hidden>Cancel</button></div>
</form>
<div class="preview-wrap" aria-label="Preview">
<p class="muted small">Preview in a chat app</p>
<div class="chat">
<div class="chat-avatar" aria-hidden="true"></div>
<div class="chat-body">
<p class="chat-name" id="preview-user">you</p>
<p class="chat-link" id="preview-link"></p>
<div class="embed-card" id="embed-preview">
<p class="ep-site" id="ep-site"></p>
<p class="ep-author" id="ep-author"></p>
<p class="ep-title" id="ep-title"></p>
<p class="ep-desc" id="ep-desc"></p>
<div class="ep-image" aria-hidden="true"></div>
</div>
</div>
</div>
</div>
</div>
<p class="status" id="embeds-status" role="status" aria-live="polite"></p>
<ul class="rows" id="embed-list" aria-label="Your embed profiles"></ul>
</section>`

/** The "Usage" tab (dashboard-usage.js): storage and upload window. */
export const usagePanel = html`<section class="panel" id="panel-usage" data-panel="usage" aria-labelledby="usage-title" hidden>
<h2 id="usage-title">Usage</h2>
<div class="card">
<h3>Storage</h3>
<progress id="storage-bar" max="100" value="0" aria-labelledby="storage-text"></progress>
<p id="storage-text"></p>
</div>
<dl class="stats" id="usage-stats"></dl>
<div class="card">
<h3>Upload window</h3>
<progress id="window-bar" max="100" value="0" aria-labelledby="window-text"></progress>
<p id="window-text"></p>
</div>
</section>`

/** The "Settings" tab (dashboard-settings.js): privacy, email, and leaving (the data's export, the account's deletion). */
export const settingsPanel = html`<section class="panel" id="panel-settings" data-panel="settings" aria-labelledby="settings-title" hidden>
<h2 id="settings-title">Settings</h2>
<form class="card" id="settings-form">
<h3>Privacy</h3>
<label class="check"><input type="checkbox" id="private-account" name="privateAccount"> Private account: every upload is private, whatever the upload asks</label>
<div class="actions"><button type="submit">Save settings</button></div>
<p class="status" id="settings-status" role="status" aria-live="polite"></p>
</form>
<div class="card">
<h3>Email</h3>
<p id="email-status"></p>
<div class="actions"><button type="button" class="secondary" id="resend-verification" hidden>Send a new verification email</button><a class="button secondary" href="/verify">Enter a token</a></div>
<p class="status" id="email-action-status" role="status" aria-live="polite"></p>
</div>
<div class="card" role="group" aria-labelledby="export-title">
<h3 id="export-title">Your data</h3>
<p class="muted">A zip of every original you uploaded, with what your account made as JSON: your images’ details, albums, embed profiles, the names of your keys and passkeys. No password, key or two-factor secret is in it.</p>
<div class="actions"><a class="button secondary" id="export-data" href="/api/account/export" download>Download my data</a></div>
<p class="status" id="export-status" role="status" aria-live="polite"></p>
</div>
<div class="card" role="group" aria-labelledby="leave-title">
<h3 id="leave-title">Delete my account</h3>
<p>Deletes your account and everything it made: your images (their links stop working at once), albums, embed profiles, API keys, sessions and webhooks. It cannot be undone: download your data first.</p>
<div class="actions"><button type="button" class="danger" id="delete-account" aria-haspopup="dialog">Delete my account</button></div>
</div>
<dialog class="card image-dialog" id="delete-dialog" aria-labelledby="delete-dialog-title" aria-describedby="delete-dialog-text">
<h3 id="delete-dialog-title">Delete your account for good?</h3>
<p id="delete-dialog-text">Everything your account made is deleted at once. Enter your password to confirm.</p>
<form class="form-grid" id="delete-form">
<label for="delete-password">Password</label>
<input id="delete-password" name="password" type="password" autocomplete="current-password" maxlength="${PASSWORD_LENGTH.max}">
<label for="delete-code">Or a two-factor code</label>
<input id="delete-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="${CODE_MAX}" aria-describedby="delete-code-hint">
<p class="muted small" id="delete-code-hint">Signed in through single sign-on and never set a password? With two-factor on, a current code (or a recovery code) confirms instead, or one of your passkeys.</p>
<p class="error" data-form-error role="alert" hidden></p>
<div class="actions"><button type="submit" class="danger">Delete my account</button><button type="button" class="danger" id="delete-passkey" hidden>Delete with a passkey</button><button type="button" class="secondary" id="delete-cancel">Cancel</button></div>
</form>
</dialog>
</section>`

/** The "Security" tab (dashboard-security.js): password and sessions, two-factor, passkeys. */
export const securityPanel = html`<section class="panel" id="panel-security" data-panel="security" aria-labelledby="security-title" hidden>
<h2 id="security-title">Security</h2>
<div id="security-sessions" data-security-section="sessions">${passwordAndSessions}</div>
<div id="security-totp" data-security-section="totp">${totpCard}</div>
<div class="card" id="security-passkeys" data-security-section="passkeys" role="group" aria-labelledby="passkeys-title">
<h3 id="passkeys-title">Passkeys</h3>
<p class="muted">A passkey signs you in with this device’s screen lock, fingerprint or face, or a security key, instead of your password (the login page’s <strong>Sign in with a passkey</strong>). Add one per device.</p>
<form class="form-inline" id="passkey-create">
<label for="passkey-name">Name</label>
<input id="passkey-name" name="name" type="text" maxlength="${PASSKEY_NAME_MAX}" placeholder="My laptop">
<button type="submit" disabled>Add a passkey</button>
<p class="error" data-form-error role="alert" hidden></p>
</form>
<p class="status" id="passkeys-status" role="status" aria-live="polite"></p>
<ul class="rows" id="passkey-list" aria-label="Your passkeys"></ul>
</div>
</section>`
