// Small progressive enhancements shared by every page. No inline scripts anywhere: the CSP forbids them.

// The session and a small JSON API client, shared by the page scripts (upload.js, auth.js, dashboard.js), which load
// after this one. The JWT lives in localStorage; a 401 from the API forgets it.
window.imghost = (() => {
  'use strict'
  const TOKEN_KEY = 'imghost.token'

  function token() {
    try {
      return localStorage.getItem(TOKEN_KEY)
    } catch {
      return null
    }
  }
  function setToken(value) {
    try {
      if (value) localStorage.setItem(TOKEN_KEY, value)
      else localStorage.removeItem(TOKEN_KEY)
    } catch {
      // Storage disabled: the session lasts as long as the page.
    }
  }

  const NETWORK_ERROR = 'Network error: check your connection and try again.'

  /** fetch for the JSON API: sends the JWT, parses the answer; never throws for HTTP errors. */
  async function api(path, opts = {}) {
    const headers = { accept: 'application/json', ...(opts.headers || {}) }
    const jwt = opts.auth === false ? null : token()
    if (jwt) headers.authorization = `Bearer ${jwt}`
    let body
    if (opts.body !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(opts.body)
    }
    let res
    try {
      res = await fetch(path, { method: opts.method || 'GET', headers, body })
    } catch {
      return {
        ok: false,
        status: 0,
        data: { error: NETWORK_ERROR },
        headers: new Headers(),
      }
    }
    let data = null
    try {
      data = await res.json()
    } catch {
      data = { error: `Unexpected answer from the server (${res.status}).` }
    }
    if (res.status === 401 && jwt) setToken(null)
    if (!res.ok && !(data && typeof data.error === 'string')) data = { error: `Request failed (${res.status}).` }
    return { ok: res.ok, status: res.status, data, headers: res.headers }
  }

  /** Binary sizes, as the server writes them: its own humanSize (src/lib/size.ts), which it serves ahead of this file. */
  const size = (bytes) => (bytes === null || bytes === undefined ? 'unlimited' : window.imghostHumanSize(bytes))

  /** A moment to the minute, in UTC ("2026-01-02 03:04 UTC"); '' for none. */
  const utcMinute = (iso) => (iso ? `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')} UTC` : '')

  /** Shows a status message in `box`, marked as an error or not. */
  function say(box, text, isError = false) {
    box.textContent = text
    box.classList.toggle('error', !!isError)
  }

  /** A page for signed-in admins without a session: its app hidden, its sign-in notice shown, saying why if told. */
  function showSignedOut(app, notice, why) {
    app.hidden = true
    notice.hidden = false
    if (why) notice.firstChild.textContent = `${why} `
  }

  /**
   * An admin page's paged list (/admin/reports, /admin/blocks): inside `root`, `[data-<name>-app]` (hidden until
   * signed in), `[data-<name>-signed-out]`, `[data-<name>-message]`, `[data-<name>-list]` and the pager. `path(state)`
   * is the API read of `state.page`; its answer holds `items(data)`, `total` and `pages`; `item` builds one `<li>`;
   * `summary(total, state)` is the status line; `forbidden` what a signed-in non-admin is told. Returns the state, `load` and
   * `say`, for the page's own actions.
   */
  function adminList(root, name, { state, path, items, item, summary, forbidden }) {
    const part = (role) => root.querySelector(`[data-${name}-${role}]`)
    const app = part('app')
    const message = part('message')
    const list = part('list')
    const prev = root.querySelector('[data-page-prev]')
    const next = root.querySelector('[data-page-next]')
    const pageLabel = root.querySelector('[data-page-label]')
    const tell = (text, isError) => say(message, text, isError)
    const signOut = (why) => showSignedOut(app, part('signed-out'), why)

    async function load() {
      tell('Loading…', false)
      const res = await api(path(state))
      if (res.status === 401) return signOut('Your session has expired.')
      if (res.status === 403) return signOut(forbidden)
      if (res.status !== 200) return tell(res.data.error || `Failed (${res.status}).`, true)
      const { total, pages } = res.data
      const rows = items(res.data)
      // The last page emptied by an action: show the one before it.
      if (state.page > 1 && rows.length === 0 && state.page > pages) {
        state.page = Math.max(1, pages)
        return load()
      }
      state.pages = pages
      list.replaceChildren(...rows.map(item))
      tell(summary(total, state), false)
      prev.disabled = state.page <= 1
      next.disabled = state.page >= pages
      pageLabel.textContent = pages > 1 ? `Page ${state.page} of ${pages}` : ''
      prev.parentElement.hidden = pages <= 1
    }

    prev.addEventListener('click', () => {
      state.page = Math.max(1, state.page - 1)
      load()
    })
    next.addEventListener('click', () => {
      state.page = Math.min(state.pages, state.page + 1)
      load()
    })
    if (!token()) signOut()
    else {
      app.hidden = false
      load()
    }
    return { state, load, say: tell }
  }

  /** Shows (or, with no message, hides) a form's error box, its `[data-form-error]`. */
  function formError(form, message) {
    const box = form.querySelector('[data-form-error]')
    box.textContent = message || ''
    box.hidden = !message
  }

  /** "1 h 5 min", "9 min 12 s", "40 s". */
  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds))
    const h = Math.floor(s / 3600)
    const m = Math.floor((s % 3600) / 60)
    const r = s % 60
    if (h) return m ? `${h} h ${m} min` : `${h} h`
    if (m) return r ? `${m} min ${r} s` : `${m} min`
    return `${r} s`
  }

  /** document.createElement with attributes and children (strings become text nodes: never parsed as HTML). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag)
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue
      if (key === 'class') node.className = value
      else if (key === 'text') node.textContent = value
      else if (value === true) node.setAttribute(key, '')
      else node.setAttribute(key, String(value))
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue
      node.append(child instanceof Node ? child : document.createTextNode(String(child)))
    }
    return node
  }

  /**
   * An image's share codes as labelled read-only fields with Copy buttons (ids `<prefix>-<key>`), filled from the
   * templates the server hands over (src/modules/pages/share-codes.ts): the upload page's results and the dashboard.
   */
  const ESCAPES = {
    markdown: (v) => v.replace(/[\\[\]]/g, (c) => `\\${c}`),
    html: (v) =>
      v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]),
  }
  // `share` is the server's data-share-codes: the codes, and the rule for the picture they embed (share-codes.ts).
  function shareFields(share, image, prefix, extra = []) {
    const { mimes, fallback } = share.picture
    const values = {
      url: image.url,
      img: mimes.includes(image.mime) ? image.url : fallback.replace('{id}', image.id),
      viewer: image.viewer,
      alt: image.filename || image.id,
      deletePage: image.deletePage,
    }
    // One pass, so a name that looks like a slot (a file "{url}.png") is never expanded again.
    const fill = (template) =>
      template.replace(/\{(url|img|viewer|alt|deletePage)(?::(markdown|html))?\}/g, (_, slot, how) =>
        how ? ESCAPES[how](values[slot]) : values[slot],
      )
    return [...share.codes, ...extra].map(({ key, label, template }) =>
      el(
        'div',
        { class: 'field' },
        el('label', { for: `${prefix}-${key}` }, label),
        el(
          'div',
          { class: 'copy-row' },
          el('input', { id: `${prefix}-${key}`, type: 'text', readonly: true, value: fill(template) }),
          el(
            'button',
            { type: 'button', class: 'secondary', 'data-copy': `${prefix}-${key}`, 'aria-label': `Copy ${label}` },
            'Copy',
          ),
        ),
      ),
    )
  }

  return {
    token,
    setToken,
    api,
    NETWORK_ERROR,
    size,
    utcMinute,
    say,
    showSignedOut,
    adminList,
    formError,
    duration,
    el,
    shareFields,
  }
})()

;(() => {
  'use strict'

  // The header shows Dashboard when a session is stored, Log in otherwise; the current page is marked.
  function updateNav() {
    const loggedIn = !!window.imghost.token()
    for (const link of document.querySelectorAll('.site-header [data-auth]')) {
      link.hidden = (link.getAttribute('data-auth') === 'in') !== loggedIn
    }
    for (const link of document.querySelectorAll('.site-header nav a')) {
      if (link.getAttribute('href') === location.pathname) link.setAttribute('aria-current', 'page')
    }
  }
  updateNav()
  window.addEventListener('storage', updateNav)

  // The light/dark toggle: the choice is kept per browser (theme.js, loaded first, applies it before the first
  // paint); without one the system's scheme applies. The button is pressed while dark is in effect. It is in the
  // markup from the start (revealing it here would shift the header, a layout shift on every page).
  const THEME_KEY = 'imghost.theme'
  const toggle = document.getElementById('theme-toggle')
  if (toggle) {
    const root = document.documentElement
    const systemDark = matchMedia('(prefers-color-scheme: dark)')
    const isDark = () => (root.dataset.theme ? root.dataset.theme === 'dark' : systemDark.matches)
    const show = () => toggle.setAttribute('aria-pressed', String(isDark()))
    toggle.addEventListener('click', () => {
      root.dataset.theme = isDark() ? 'light' : 'dark'
      try {
        localStorage.setItem(THEME_KEY, root.dataset.theme)
      } catch {
        // Storage disabled: the choice lasts as long as the page.
      }
      show()
    })
    systemDark.addEventListener('change', show)
    // A choice made in another tab applies here too.
    window.addEventListener('storage', (event) => {
      if (event.key !== THEME_KEY) return
      if (event.newValue === 'light' || event.newValue === 'dark') root.dataset.theme = event.newValue
      else delete root.dataset.theme
      show()
    })
    show()
  }

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text)
      return true
    } catch {
      return false
    }
  }

  // <button data-copy="input-id">: copies that input's value; <button data-copy-text="...">: copies that text.
  document.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-copy], [data-copy-text]') : null
    if (!button) return
    const input = button.hasAttribute('data-copy') ? document.getElementById(button.getAttribute('data-copy')) : null
    const text = input ? input.value : button.getAttribute('data-copy-text')
    if (text === null) return
    let ok = await copyText(text)
    if (!ok && input) {
      input.select()
      ok = document.execCommand('copy')
    }
    const label = button.textContent
    button.textContent = ok ? 'Copied!' : 'Press Ctrl+C'
    setTimeout(() => (button.textContent = label), 1500)
  })

  // Mature images are not in the markup (so link previews never show them): <img data-preview> gets its blurred
  // thumbnail here, and <button data-reveal> inside a .nsfw container swaps in the original (data-src) and unblurs it.
  function loadPreviews() {
    for (const img of document.querySelectorAll('img[data-preview]:not([src])'))
      img.src = img.getAttribute('data-preview')
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', loadPreviews)
  else loadPreviews()

  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-reveal]') : null
    if (!button) return
    const box = button.closest('.nsfw')
    if (!box) return
    for (const img of box.querySelectorAll('img[data-src]')) img.src = img.getAttribute('data-src')
    box.classList.remove('is-hidden')
    // The button disappears with the warning: keep the keyboard focus on the image's link.
    const link = box.querySelector('a')
    if (link && document.activeElement === button) link.focus()
  })

  // Read-only code fields select their whole text on focus, for a quick manual copy.
  document.addEventListener('focusin', (event) => {
    const el = event.target
    if (el instanceof HTMLInputElement && el.readOnly) el.select()
  })

  // The album password form: keep the typed password out of the URL and history; show the pending state.
  document.addEventListener('submit', (event) => {
    const form = event.target
    if (!(form instanceof HTMLFormElement) || !form.matches('.password-form')) return
    const button = form.querySelector('button[type="submit"]')
    if (button) {
      button.disabled = true
      button.textContent = 'Opening…'
    }
  })
})()

// Coming back to a page from the history restores it as it was: re-enable a form button left disabled.
window.addEventListener('pageshow', () => {
  for (const button of document.querySelectorAll('.password-form button[type="submit"]')) {
    button.disabled = false
    button.textContent = 'Open album'
  }
})
