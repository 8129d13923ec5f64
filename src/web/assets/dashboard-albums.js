// The dashboard's Albums tab: create, edit and delete albums; also fills the album selects of other tabs.
// Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { el } = window.imghost
  const { $, state, call, dateText, plural, say, formError } = d

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

  d.loaders.albums = loadAlbums
  d.loadAlbums = loadAlbums
  d.albumOptions = albumOptions
})()
