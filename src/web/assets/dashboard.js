// The account dashboard: a small client-side app over the JSON API, authenticated by the JWT in localStorage.
// Sections (tabs, by URL hash): images, albums, API keys, embed profiles, usage, settings.
;(() => {
  'use strict'
  const root = document.getElementById('dashboard')
  if (!root || !window.imghost) return
  const { api, token, size, duration, el } = window.imghost

  if (!token()) {
    location.replace(`/login?next=${encodeURIComponent(`/dashboard${location.hash}`)}`)
    return
  }

  const $ = (id) => document.getElementById(id)
  const config = {
    siteName: root.dataset.siteName,
    siteColor: root.dataset.siteColor,
    publicUrl: root.dataset.publicUrl,
    maxEmbeds: Number(root.dataset.maxEmbeds),
    maxBulk: Number(root.dataset.maxBulk),
  }
  const state = {
    user: null,
    albums: [],
    profiles: [],
    images: { page: 1, pages: 0, items: [], filter: { visibility: '', nsfw: '' } },
    selected: new Set(),
  }

  /** The API, but a 401 (expired or revoked session) goes back to the login page. */
  async function call(path, opts) {
    const res = await api(path, opts)
    if (res.status === 401) {
      location.replace(`/login?next=${encodeURIComponent(`/dashboard${location.hash}`)}`)
      // The page is going away: whatever waited for this answer never continues.
      return new Promise(() => {})
    }
    return res
  }

  /** Runs `fn` over `items`, a few at a time. */
  async function eachLimited(items, limit, fn) {
    const results = new Array(items.length)
    let next = 0
    const worker = async () => {
      while (next < items.length) {
        const i = next++
        results[i] = await fn(items[i])
      }
    }
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
    return results
  }

  const dateText = (iso) =>
    iso ? new Date(iso).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' }) : ''
  const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`

  /** Shows a status message in the element (or the element with that id). */
  function say(target, text, isError = false) {
    const box = typeof target === 'string' ? $(target) : target
    box.textContent = text
    box.classList.toggle('error', isError)
  }
  function formError(form, message) {
    const box = form.querySelector('[data-form-error]')
    box.textContent = message || ''
    box.hidden = !message
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Tabs.

  const TABS = ['images', 'albums', 'keys', 'embeds', 'usage', 'settings']
  const loaders = {}
  function showTab() {
    const name = TABS.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'images'
    for (const panel of document.querySelectorAll('[data-panel]')) panel.hidden = panel.dataset.panel !== name
    for (const tab of document.querySelectorAll('[data-tab]')) {
      if (tab.dataset.tab === name) tab.setAttribute('aria-current', 'page')
      else tab.removeAttribute('aria-current')
    }
    if (loaders[name]) loaders[name]()
  }
  window.addEventListener('hashchange', showTab)

  // ---------------------------------------------------------------------------------------------------------------
  // The account.

  async function loadUser() {
    const res = await call('/api/auth/me')
    if (!res.ok) {
      $('dash-user').textContent = res.data.error
      return false
    }
    state.user = res.data.user
    const u = state.user
    $('dash-user').replaceChildren(
      'Logged in as ',
      el('a', { href: `/u/${encodeURIComponent(u.username)}` }, u.username),
      ` · ${u.email}${u.role === 'admin' ? ' · admin' : ''} · `,
      el('a', { href: '/logout' }, 'Log out'),
    )
    const banner = $('dash-banner')
    const welcome = new URLSearchParams(location.search).get('welcome')
    if (!u.emailVerified) {
      banner.replaceChildren(
        el('strong', {}, welcome ? 'Welcome! ' : ''),
        'Verify your email address to raise your storage limit: open the link in the email we sent you, or ',
        el('a', { href: '/verify' }, 'enter the token'),
        '.',
      )
      banner.hidden = false
    } else if (welcome) {
      banner.textContent = 'Welcome!'
      banner.hidden = false
    }
    return true
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Images.

  const grid = $('image-grid')
  const PAGE_SIZE = 24

  async function loadImages() {
    const img = state.images
    const query = new URLSearchParams({ page: String(img.page), limit: String(PAGE_SIZE) })
    if (img.filter.visibility) query.set('visibility', img.filter.visibility)
    if (img.filter.nsfw) query.set('nsfw', img.filter.nsfw)
    grid.setAttribute('aria-busy', 'true')
    const res = await call(`/api/images?${query}`)
    grid.removeAttribute('aria-busy')
    if (!res.ok) return say('images-status', res.data.error, true)
    if (res.data.pages > 0 && img.page > res.data.pages) {
      img.page = res.data.pages
      return loadImages()
    }
    img.items = res.data.images
    img.pages = res.data.pages
    img.total = res.data.total
    // A reload keeps what is still listed selected: a box ticked while the list was loading stays ticked.
    state.selected = new Set(img.items.map((i) => i.id).filter((id) => state.selected.has(id)))
    renderImages()
  }

  function renderImages() {
    const img = state.images
    grid.replaceChildren(
      ...img.items.map((image) => {
        const box = el('input', { type: 'checkbox', value: image.id, 'aria-label': `Select ${image.filename}` })
        box.checked = state.selected.has(image.id)
        box.addEventListener('change', () => {
          if (box.checked) state.selected.add(image.id)
          else state.selected.delete(image.id)
          updateSelection()
        })
        const tags = el('p', { class: 'tags' })
        if (image.visibility === 'private') tags.append(el('span', { class: 'tag' }, 'Private'))
        if (image.nsfw) tags.append(el('span', { class: 'tag danger' }, 'NSFW'))
        tags.append(el('span', { class: 'muted' }, plural(image.views, 'view')))
        return el(
          'li',
          { class: 'tile dash-tile', 'data-id': image.id },
          el('label', { class: 'pick' }, box),
          // The owner's own dashboard shows mature thumbnails unblurred.
          el(
            'a',
            { class: 'thumb', href: image.viewer },
            el('img', { src: image.thumbnail, alt: image.filename, loading: 'lazy', width: 250, height: 250 }),
          ),
          el('p', { class: 'tile-meta' }, el('span', { class: 'name', title: image.filename }, image.filename)),
          tags,
        )
      }),
    )
    const filtered = img.filter.visibility || img.filter.nsfw
    if (!img.items.length) {
      grid.append(
        el(
          'li',
          { class: 'empty muted' },
          filtered ? 'No images match these filters.' : 'No images yet. ',
          filtered ? null : el('a', { href: '/' }, 'Upload some'),
        ),
      )
    }
    say('images-status', img.total ? `${plural(img.total, 'image')}${filtered ? ' match' : ''}` : '')
    const pager = $('image-pager')
    pager.replaceChildren()
    if (img.pages > 1) {
      const prev = el('button', { type: 'button', class: 'secondary', disabled: img.page <= 1 }, '← Previous')
      const next = el('button', { type: 'button', class: 'secondary', disabled: img.page >= img.pages }, 'Next →')
      prev.addEventListener('click', () => {
        img.page--
        loadImages()
      })
      next.addEventListener('click', () => {
        img.page++
        loadImages()
      })
      pager.append(prev, el('span', { class: 'muted' }, `Page ${img.page} of ${img.pages}`), next)
    }
    updateSelection()
  }

  function updateSelection() {
    const n = state.selected.size
    $('selected-count').textContent = `${n} selected`
    for (const button of document.querySelectorAll('[data-bulk]')) button.disabled = n === 0
    const all = $('select-all')
    all.checked = n > 0 && n === state.images.items.length
    all.indeterminate = n > 0 && n < state.images.items.length
    for (const tile of grid.querySelectorAll('[data-id]'))
      tile.classList.toggle('selected', state.selected.has(tile.dataset.id))
  }

  $('select-all').addEventListener('change', (event) => {
    state.selected = new Set(event.target.checked ? state.images.items.map((i) => i.id) : [])
    for (const box of grid.querySelectorAll('input[type="checkbox"]')) box.checked = event.target.checked
    updateSelection()
  })
  for (const [id, key] of [
    ['filter-visibility', 'visibility'],
    ['filter-nsfw', 'nsfw'],
  ]) {
    $(id).addEventListener('change', (event) => {
      state.images.filter[key] = event.target.value
      state.images.page = 1
      loadImages()
    })
  }

  const BULK_PATCH = {
    public: { visibility: 'public' },
    private: { visibility: 'private' },
    nsfw: { nsfw: true },
    sfw: { nsfw: false },
  }

  async function bulk(action) {
    const ids = [...state.selected]
    if (!ids.length) return
    const what = plural(ids.length, 'image')
    let results
    if (BULK_PATCH[action]) {
      results = await eachLimited(ids, 4, (id) =>
        call(`/api/images/${id}`, { method: 'PATCH', body: BULK_PATCH[action] }),
      )
    } else if (action === 'delete') {
      if (!confirm(`Delete ${what}? Their links stop working at once. This cannot be undone.`)) return
      results = await eachLimited(ids, 4, (id) => call(`/api/images/${id}`, { method: 'DELETE' }))
    } else if (action === 'album') {
      const albumId = $('bulk-album').value
      if (!albumId) return say('images-status', 'Choose an album first.', true)
      results = await eachLimited(ids, 4, (id) =>
        call(`/api/albums/${albumId}/images`, { method: 'POST', body: { imageId: id } }),
      )
      loadAlbums()
    } else if (action === 'embed') {
      const value = $('bulk-embed').value
      const res = await call('/api/images/bulk-embed', {
        method: 'PATCH',
        body: { image_ids: ids.slice(0, config.maxBulk), embed_profile_id: value ? Number(value) : null },
      })
      results = ids.map(() => res)
    } else return
    const failed = results.filter((r) => !r.ok)
    const done = {
      public: 'made public',
      private: 'made private',
      nsfw: 'marked NSFW',
      sfw: 'unmarked as NSFW',
      delete: 'deleted',
      album: 'added to the album',
      embed: 'given the embed profile',
    }[action]
    const message = failed.length
      ? `${ids.length - failed.length} of ${what} ${done}; ${failed.length} failed: ${failed[0].data.error}`
      : `${what} ${done}.`
    await loadImages()
    say('images-status', message, failed.length > 0)
  }
  for (const button of document.querySelectorAll('[data-bulk]')) {
    button.addEventListener('click', async () => {
      const buttons = document.querySelectorAll('[data-bulk]')
      for (const b of buttons) b.disabled = true
      try {
        await bulk(button.dataset.bulk)
      } finally {
        updateSelection()
      }
    })
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Albums.

  async function loadAlbums() {
    const res = await call('/api/albums')
    if (!res.ok) return say('albums-status', res.data.error, true)
    state.albums = res.data.albums
    renderAlbums()
    albumOptions($('bulk-album'), 'Choose an album…')
  }

  /** Fills an album <select> with the albums after an option for none, keeping the choice while it still exists. */
  function albumOptions(select, noneLabel) {
    const current = select.value
    select.replaceChildren(
      el('option', { value: '' }, noneLabel),
      ...state.albums.map((a) => el('option', { value: a.id }, a.title)),
    )
    select.value = state.albums.some((a) => a.id === current) ? current : ''
  }

  function renderAlbums() {
    const list = $('album-list')
    list.replaceChildren(
      ...state.albums.map((album) => {
        const edit = el('button', { type: 'button', class: 'secondary small' }, 'Edit')
        const del = el('button', { type: 'button', class: 'danger small' }, 'Delete')
        const row = el(
          'li',
          { class: 'row', 'data-album': album.id },
          el(
            'a',
            { class: 'row-thumb', href: album.url, tabindex: -1, 'aria-hidden': 'true' },
            album.cover ? el('img', { src: album.cover, alt: '', loading: 'lazy' }) : null,
          ),
          el(
            'div',
            { class: 'row-main' },
            el('a', { class: 'row-title', href: album.url }, album.title),
            el(
              'p',
              { class: 'muted small' },
              `${plural(album.imageCount, 'image')} · ${album.isPublic ? 'Public' : 'Private'}${album.hasPassword ? ' · Password' : ''} · created ${dateText(album.createdAt)}`,
            ),
            album.description ? el('p', { class: 'small' }, album.description) : null,
          ),
          el('div', { class: 'row-actions' }, edit, del),
        )
        edit.addEventListener('click', () => editAlbum(row, album))
        del.addEventListener('click', async () => {
          if (!confirm(`Delete the album “${album.title}”? Its images stay.`)) return
          const res = await call(`/api/albums/${album.id}`, { method: 'DELETE' })
          say('albums-status', res.ok ? `Album “${album.title}” deleted.` : res.data.error, !res.ok)
          loadAlbums()
        })
        return row
      }),
    )
    if (!state.albums.length) list.append(el('li', { class: 'empty muted' }, 'No albums yet.'))
  }

  function editAlbum(row, album) {
    if (row.querySelector('form')) return
    const form = $('album-edit-template').content.firstElementChild.cloneNode(true)
    form.elements.title.value = album.title
    form.elements.description.value = album.description || ''
    form.elements.isPublic.checked = album.isPublic
    form.elements.removePassword.closest('label').hidden = !album.hasPassword
    row.append(form)
    form.elements.title.focus()
    form.querySelector('[data-cancel]').addEventListener('click', () => form.remove())
    form.addEventListener('submit', async (event) => {
      event.preventDefault()
      const body = {
        title: form.elements.title.value,
        description: form.elements.description.value,
        isPublic: form.elements.isPublic.checked,
      }
      if (form.elements.removePassword.checked) body.password = null
      else if (form.elements.password.value) body.password = form.elements.password.value
      const res = await call(`/api/albums/${album.id}`, { method: 'PUT', body })
      if (!res.ok) return formError(form, res.data.error)
      say('albums-status', `Album “${res.data.album.title}” saved.`)
      loadAlbums()
    })
  }

  $('album-create').addEventListener('submit', async (event) => {
    event.preventDefault()
    const form = event.target
    formError(form, '')
    const body = {
      title: form.elements.title.value,
      description: form.elements.description.value,
      isPublic: form.elements.isPublic.checked,
    }
    const res = await call('/api/albums', { method: 'POST', body })
    if (!res.ok) return formError(form, res.data.error)
    form.reset()
    say('albums-status', `Album “${res.data.album.title}” created.`)
    loadAlbums()
  })

  // ---------------------------------------------------------------------------------------------------------------
  // API keys and the uploader configs (ShareX, shell, Flameshot) made by the server for a key.

  let newSecret = null // the new key's secret: only until "Done"
  const newKeyDownloads = $('key-secret').querySelector('[data-client-downloads]')

  function save(filename, blob) {
    const url = URL.createObjectURL(blob)
    const link = el('a', { href: url, download: filename, hidden: true })
    document.body.append(link)
    link.click()
    link.remove()
    setTimeout(() => URL.revokeObjectURL(url), 10_000)
  }

  /**
   * Saves GET /api/v1/clients/<kind> under the server's file name, with the visibility and album chosen in `block`.
   * The secret is stored nowhere, so the key itself must authenticate the request.
   */
  async function downloadClient(block, kind, secret) {
    const query = new URLSearchParams()
    for (const name of ['visibility', 'album']) {
      const value = block.querySelector(`select[name="${name}"]`).value
      if (value) query.set(name, value)
    }
    const status = block.querySelector('[data-client-status]')
    let res
    try {
      // Plain fetch, not api(): the key is the credential here, and its refusal must not end the dashboard session.
      res = await fetch(`/api/v1/clients/${kind}${String(query) ? `?${query}` : ''}`, {
        headers: { 'x-api-key': secret },
      })
    } catch {
      return say(status, 'Network error: check your connection and try again.', true)
    }
    if (!res.ok) {
      const data = await res.json().catch(() => null)
      return say(status, data && typeof data.error === 'string' ? data.error : `Download failed (${res.status}).`, true)
    }
    const filename = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') || '')?.[1] || kind
    save(filename, await res.blob())
    say(status, `Downloaded ${filename}.`)
  }

  /** Makes a block's download buttons work; `secretOf()` gives the key's secret, or null when there is none to use. */
  function wireDownloads(block, secretOf) {
    for (const button of block.querySelectorAll('[data-client]')) {
      button.addEventListener('click', async () => {
        const secret = secretOf()
        if (!secret) return
        button.disabled = true
        try {
          await downloadClient(block, button.dataset.client, secret)
        } finally {
          button.disabled = false
        }
      })
    }
  }
  wireDownloads(newKeyDownloads, () => newSecret)

  async function loadKeys() {
    const res = await call('/api/keys')
    const list = $('key-list')
    if (!res.ok) return list.replaceChildren(el('li', { class: 'error' }, res.data.error))
    list.replaceChildren(
      ...res.data.keys.map((key) => {
        const revoke = el('button', { type: 'button', class: 'danger small' }, 'Revoke')
        const configs = el('button', { type: 'button', class: 'secondary small' }, 'Uploader configs')
        const row = el(
          'li',
          { class: 'row', 'data-key': key.id },
          el(
            'div',
            { class: 'row-main' },
            el('span', { class: 'row-title' }, key.name),
            el(
              'p',
              { class: 'muted small' },
              el('code', {}, `${key.prefix}…`),
              ` · created ${dateText(key.createdAt)} · ${key.lastUsedAt ? `last used ${dateText(key.lastUsedAt)}` : 'never used'}`,
            ),
          ),
          el('div', { class: 'row-actions' }, configs, revoke),
        )
        revoke.addEventListener('click', async () => {
          if (!confirm(`Revoke the key “${key.name}”? Tools using it stop working at once.`)) return
          const r = await call(`/api/keys/${key.id}`, { method: 'DELETE' })
          if (!r.ok) alert(r.data.error)
          loadKeys()
        })
        // The secret is never stored: configs for an existing key need its secret pasted (checked against the prefix).
        configs.addEventListener('click', () => {
          if (row.querySelector('.key-configs')) return
          const field = el('input', {
            type: 'password',
            autocomplete: 'off',
            'aria-label': `Secret of the key ${key.name}`,
            placeholder: 'Paste this key’s secret',
          })
          const error = el('p', { class: 'error small', role: 'alert', hidden: true })
          const block = $('client-downloads-template').content.firstElementChild.cloneNode(true)
          albumOptions(block.querySelector('select[name="album"]'), 'No album')
          wireDownloads(block, () => {
            const secret = field.value.trim()
            const wrong = !secret.startsWith(key.prefix) || secret.length < 32
            error.textContent = wrong
              ? 'That is not the secret of this key. Secrets are shown only once: create a new key if it is lost.'
              : ''
            error.hidden = !wrong
            return wrong ? null : secret
          })
          row.append(el('div', { class: 'key-configs' }, el('div', { class: 'form-inline' }, field, error), block))
          field.focus()
        })
        return row
      }),
    )
    if (!res.data.keys.length) list.append(el('li', { class: 'empty muted' }, 'No API keys yet.'))
  }

  $('key-create').addEventListener('submit', async (event) => {
    event.preventDefault()
    const form = event.target
    formError(form, '')
    const name = form.elements.name.value.trim()
    const res = await call('/api/keys', { method: 'POST', body: { name } })
    if (!res.ok) return formError(form, res.data.error)
    form.reset()
    newSecret = res.data.apiKey
    $('new-key').value = newSecret
    $('key-secret-name').textContent = res.data.key.name
    albumOptions(newKeyDownloads.querySelector('select[name="album"]'), 'No album')
    say(newKeyDownloads.querySelector('[data-client-status]'), '')
    const box = $('key-secret')
    box.hidden = false
    box.focus()
    loadKeys()
  })
  $('key-secret-done').addEventListener('click', () => {
    newSecret = null
    $('new-key').value = ''
    $('key-secret').hidden = true
    $('key-name').focus()
  })

  // ---------------------------------------------------------------------------------------------------------------
  // Embed profiles, with a live preview.

  const embedForm = $('embed-form')
  const FIELDS = ['name', 'site_name', 'author_name', 'author_url', 'title', 'description', 'color']
  let editing = null // the profile being edited, or null when creating

  const SAMPLE = {
    filename: 'sunset.jpg',
    id: 'AbC123xY',
    width: 1920,
    height: 1080,
    size: 2516582,
    mime: 'image/jpeg',
    views: 42,
  }
  function fill(text) {
    if (!text) return ''
    const values = {
      ...SAMPLE,
      size: size(SAMPLE.size),
      date: new Date().toISOString().slice(0, 10),
      username: state.user ? state.user.username : 'you',
    }
    return text.replace(/\{(filename|id|width|height|size|mime|date|views|username)\}/g, (_, name) =>
      String(values[name]),
    )
  }

  function updatePreview() {
    const v = (name) => embedForm.elements[name].value.trim()
    const color = /^#[0-9a-fA-F]{6}$/.test(v('color')) ? v('color') : config.siteColor
    $('embed-preview').style.borderLeftColor = color
    $('preview-link').textContent = `${config.publicUrl}/i/${SAMPLE.id}`
    $('preview-user').textContent = state.user ? state.user.username : 'you'
    $('ep-site').textContent = fill(v('site_name')) || config.siteName
    const author = fill(v('author_name'))
    $('ep-author').textContent = author
    $('ep-author').hidden = !author
    $('ep-author').classList.toggle('is-link', !!v('author_url'))
    $('ep-title').textContent = fill(v('title')) || SAMPLE.filename
    $('ep-desc').textContent = fill(v('description')) || `${SAMPLE.width}×${SAMPLE.height} · ${size(SAMPLE.size)}`
  }
  embedForm.addEventListener('input', (event) => {
    if (event.target.id === 'embed-color-picker') embedForm.elements.color.value = event.target.value
    if (event.target.id === 'embed-color' && /^#[0-9a-fA-F]{6}$/.test(event.target.value))
      $('embed-color-picker').value = event.target.value.toLowerCase()
    updatePreview()
  })

  function resetEmbedForm() {
    editing = null
    embedForm.reset()
    $('embed-color-picker').value = config.siteColor
    $('embed-form-title').textContent = 'New profile'
    $('embed-submit').textContent = 'Create profile'
    $('embed-cancel').hidden = true
    formError(embedForm, '')
    updateLimit()
    updatePreview()
  }

  function updateLimit() {
    const n = state.profiles.length
    $('embed-count').textContent = `${n} of ${config.maxEmbeds} profiles used.`
    const full = !editing && n >= config.maxEmbeds
    $('embed-submit').disabled = full
    if (full)
      formError(
        embedForm,
        `You have ${config.maxEmbeds} profiles, the most allowed. Delete one to create another, or edit one.`,
      )
  }

  async function loadProfiles() {
    const res = await call('/api/embeds')
    if (!res.ok) return say('embeds-status', res.data.error, true)
    state.profiles = res.data.profiles
    const list = $('embed-list')
    list.replaceChildren(
      ...state.profiles.map((profile) => {
        const swatch = el('span', { class: 'swatch', 'aria-hidden': 'true' })
        swatch.style.backgroundColor = profile.color || config.siteColor
        const edit = el('button', { type: 'button', class: 'secondary small' }, 'Edit')
        const del = el('button', { type: 'button', class: 'danger small' }, 'Delete')
        edit.addEventListener('click', () => {
          editing = profile
          for (const name of FIELDS) embedForm.elements[name].value = profile[name] || ''
          if (profile.color) $('embed-color-picker').value = profile.color.toLowerCase()
          $('embed-form-title').textContent = `Edit “${profile.name}”`
          $('embed-submit').textContent = 'Save profile'
          $('embed-cancel').hidden = false
          formError(embedForm, '')
          updateLimit()
          updatePreview()
          embedForm.elements.name.focus()
        })
        del.addEventListener('click', async () => {
          if (!confirm(`Delete the embed profile “${profile.name}”? Images using it go back to the default embed.`))
            return
          const r = await call(`/api/embeds/${profile.id}`, { method: 'DELETE' })
          say('embeds-status', r.ok ? `Profile “${profile.name}” deleted.` : r.data.error, !r.ok)
          if (editing && editing.id === profile.id) resetEmbedForm()
          loadProfiles()
        })
        return el(
          'li',
          { class: 'row', 'data-profile': profile.id },
          swatch,
          el(
            'div',
            { class: 'row-main' },
            el('span', { class: 'row-title' }, profile.name),
            el(
              'p',
              { class: 'muted small' },
              [profile.site_name, profile.title, profile.author_name].filter(Boolean).join(' · ') || 'Default texts',
            ),
          ),
          el('div', { class: 'row-actions' }, edit, del),
        )
      }),
    )
    if (!state.profiles.length)
      list.append(el('li', { class: 'empty muted' }, 'No embed profiles yet: links use the default embed.'))
    const select = $('bulk-embed')
    const current = select.value
    select.replaceChildren(
      el('option', { value: '' }, 'Default embed'),
      ...state.profiles.map((p) => el('option', { value: String(p.id) }, p.name)),
    )
    select.value = state.profiles.some((p) => String(p.id) === current) ? current : ''
    updateLimit()
  }

  embedForm.addEventListener('submit', async (event) => {
    event.preventDefault()
    formError(embedForm, '')
    const body = {}
    for (const name of FIELDS) {
      const value = embedForm.elements[name].value.trim()
      body[name] = name === 'name' ? value : value || null
    }
    const res = editing
      ? await call(`/api/embeds/${editing.id}`, { method: 'PUT', body })
      : await call('/api/embeds', { method: 'POST', body })
    if (!res.ok) return formError(embedForm, res.data.error)
    say(
      'embeds-status',
      `Profile “${res.data.profile.name}” ${editing ? 'saved' : 'created'}. Assign it to images from the Images tab.`,
    )
    resetEmbedForm()
    loadProfiles()
  })
  $('embed-cancel').addEventListener('click', resetEmbedForm)

  // ---------------------------------------------------------------------------------------------------------------
  // Usage.

  let countdown = null
  async function loadUsage() {
    const res = await call('/api/account/usage')
    if (!res.ok) {
      $('storage-text').textContent = res.data.error
      return
    }
    const u = res.data
    const bar = $('storage-bar')
    if (u.storage.limit === null) {
      bar.hidden = true
      $('storage-text').textContent = `${size(u.storage.used)} used · no storage limit`
    } else {
      bar.hidden = false
      bar.max = u.storage.limit
      bar.value = u.storage.used
      const pct = u.storage.limit ? Math.min(100, (u.storage.used / u.storage.limit) * 100) : 0
      $('storage-text').textContent =
        `${size(u.storage.used)} of ${size(u.storage.limit)} used (${pct < 1 && pct > 0 ? '<1' : Math.round(pct)}%) · ${size(u.storage.remaining)} left`
    }
    const stat = (label, value) => [el('div', {}, el('dt', {}, label), el('dd', {}, value))]
    $('usage-stats').replaceChildren(
      ...stat('Images', String(u.totalImages)),
      ...stat('Largest file', u.limits.maxFileSize === null ? 'unlimited' : size(u.limits.maxFileSize)),
      ...stat(
        'Files per upload',
        u.limits.maxFilesPerUpload === null ? 'unlimited' : String(u.limits.maxFilesPerUpload),
      ),
      ...stat('Email', u.emailVerified ? 'verified' : 'not verified'),
    )
    const rate = u.rateLimit
    const windowBar = $('window-bar')
    windowBar.max = rate.limit
    windowBar.value = rate.used
    let left = rate.resetSeconds
    const tick = () => {
      $('window-text').textContent =
        `${rate.used} of ${rate.limit} uploads used in this ${rate.window} window · ${rate.remaining} left · ` +
        (rate.used ? `resets in ${duration(left)}` : 'the window starts with your next upload')
    }
    clearInterval(countdown)
    tick()
    if (rate.used) {
      countdown = setInterval(() => {
        left--
        if (left <= 0) {
          clearInterval(countdown)
          loadUsage()
        } else tick()
      }, 1000)
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Settings.

  function renderSettings() {
    const u = state.user
    if (!u) return
    $('private-account').checked = u.privateAccount
    $('email-status').textContent = u.emailVerified ? `${u.email} is verified.` : `${u.email} is not verified yet.`
    $('resend-verification').hidden = u.emailVerified
  }
  $('settings-form').addEventListener('submit', async (event) => {
    event.preventDefault()
    const res = await call('/api/account', { method: 'PATCH', body: { privateAccount: $('private-account').checked } })
    if (!res.ok) return say('settings-status', res.data.error, true)
    state.user = res.data.user
    renderSettings()
    say(
      'settings-status',
      state.user.privateAccount
        ? 'Saved: every upload is now private.'
        : 'Saved: uploads follow the visibility you choose.',
    )
  })
  $('resend-verification').addEventListener('click', async () => {
    const res = await call('/api/auth/resend-verification', { method: 'POST' })
    say('email-action-status', res.ok ? 'A new verification email is on its way.' : res.data.error, !res.ok)
  })

  // ---------------------------------------------------------------------------------------------------------------

  loaders.images = loadImages
  loaders.albums = loadAlbums
  loaders.keys = loadKeys
  loaders.embeds = () => {
    updatePreview()
    return loadProfiles()
  }
  loaders.usage = loadUsage
  loaders.settings = renderSettings
  ;(async () => {
    if (!(await loadUser())) return
    // The selects of the image toolbar need the albums and profiles whatever the tab.
    await Promise.all([loadAlbums(), loadProfiles()])
    showTab()
  })()
})()
