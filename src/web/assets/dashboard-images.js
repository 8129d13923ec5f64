// The dashboard's Images tab: the owner's images, search, filters, order, selection and bulk actions; each tile copies
// its direct link and opens a dialog with all its share codes, rename and expiry.
// Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { el, size, shareFields } = window.imghost
  const { $, config, state, call, eachLimited, dateText, plural, say } = d

  const grid = $('image-grid')
  const PAGE_SIZE = 24

  async function loadImages() {
    const img = state.images
    const query = new URLSearchParams({ page: String(img.page), limit: String(PAGE_SIZE) })
    if (img.filter.visibility) query.set('visibility', img.filter.visibility)
    if (img.filter.nsfw) query.set('nsfw', img.filter.nsfw)
    if (img.filter.q) query.set('q', img.filter.q)
    const [sort, order] = img.order.split('-')
    query.set('sort', sort)
    query.set('order', order)
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
    img.capped = res.data.capped === true
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
        tags.append(
          el('span', { class: 'muted' }, `${plural(image.views, 'view')} · ${size(image.size)}`),
          el('span', { class: 'muted' }, dateText(image.created_at)),
        )
        const more = el(
          'button',
          {
            type: 'button',
            class: 'secondary small',
            'aria-haspopup': 'dialog',
            'aria-label': `Links & edit: ${image.filename}`,
          },
          'Links & edit',
        )
        more.addEventListener('click', () => openDialog(image))
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
          el(
            'p',
            { class: 'tile-actions' },
            el(
              'button',
              {
                type: 'button',
                class: 'secondary small',
                'data-copy-text': image.url,
                'aria-label': `Copy link: ${image.filename}`,
              },
              'Copy link',
            ),
            more,
          ),
        )
      }),
    )
    const filtered = img.filter.visibility || img.filter.nsfw || img.filter.q
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
    // A name matching more than the server counts says so (the API's capped): narrow it to reach the others.
    const counted = img.capped
      ? `More than ${plural(img.total, 'image')} match: the first ${img.total.toLocaleString('en')} are listed; narrow the name to reach the others`
      : `${plural(img.total, 'image')}${filtered ? ' match' : ''}`
    say('images-status', img.total ? counted : '')
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

  // Search as the owner types (after a pause), and the order.
  let typing = null
  $('filter-name').addEventListener('input', (event) => {
    clearTimeout(typing)
    typing = setTimeout(() => {
      state.images.filter.q = event.target.value.trim()
      state.images.page = 1
      loadImages()
    }, 300)
  })
  $('sort-images').addEventListener('change', (event) => {
    state.images.order = event.target.value
    state.images.page = 1
    loadImages()
  })

  // ---------------------------------------------------------------------------------------------------------------
  // One image's dialog: its share codes (as on the upload page), rename, expiry.

  const dialog = $('image-dialog')
  let current = null
  function showImage() {
    $('image-dialog-title').textContent = current.filename
    $('image-dialog-codes').replaceChildren(...shareFields(config.shareCodes, current, 'image-code'))
    $('image-dialog-expiry').textContent = current.expiresAt
      ? `Deleted on ${new Date(current.expiresAt).toLocaleString()}.`
      : 'Kept until you delete it.'
  }
  function openDialog(image) {
    current = { ...image }
    showImage()
    $('rename-input').value = image.filename
    $('expiry-select').value = 'never'
    say('image-dialog-status', '')
    dialog.showModal()
  }
  /** PATCHes the dialog's image; on success shows the change there and in the grid. */
  async function change(body, done) {
    const res = await call(`/api/images/${current.id}`, { method: 'PATCH', body })
    if (!res.ok) return say('image-dialog-status', res.data.error, true)
    Object.assign(current, { filename: res.data.filename, expiresAt: res.data.expiresAt })
    showImage()
    say('image-dialog-status', done)
    loadImages()
  }
  $('rename-form').addEventListener('submit', (event) => {
    event.preventDefault()
    change({ filename: $('rename-input').value }, 'Renamed.')
  })
  $('expiry-form').addEventListener('submit', (event) => {
    event.preventDefault()
    const value = $('expiry-select').value
    change({ expires: value === 'never' ? null : value }, value === 'never' ? 'It never expires now.' : 'Expiry set.')
  })

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
      d.loadAlbums()
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

  d.loaders.images = loadImages
})()
