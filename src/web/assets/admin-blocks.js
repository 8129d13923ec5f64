// /admin/blocks: lists blocked pictures (GET /api/admin/blocks) and lifts a block (DELETE /api/admin/blocks/:id).
// Uses the session JWT of the web UI (site.js). Text goes in via textContent only.
;(() => {
  'use strict'
  const root = document.querySelector('[data-admin-blocks]')
  if (!root || !window.imghost) return
  const { token, el, api, utcMinute: when } = window.imghost
  const LIMIT = 20
  const app = root.querySelector('[data-blocks-app]')
  const signedOut = root.querySelector('[data-blocks-signed-out]')
  const list = root.querySelector('[data-blocks-list]')
  const message = root.querySelector('[data-blocks-message]')
  const prev = root.querySelector('[data-page-prev]')
  const next = root.querySelector('[data-page-next]')
  const pageLabel = root.querySelector('[data-page-label]')
  const state = { page: 1, pages: 0 }

  function say(text, isError) {
    window.imghost.say(message, text, isError)
  }
  function signOut(why) {
    window.imghost.showSignedOut(app, signedOut, why)
  }

  /** A kept thumbnail needs the session's token: fetched, then shown as a data: URL (the pages' CSP allows those). */
  function thumbnail(block) {
    if (!block.thumbnail) return el('div', { class: 'gone', text: 'No thumbnail kept' })
    const img = el('img', { class: 'report-thumb', alt: `Block ${block.id}` })
    fetch(block.thumbnail, { headers: { authorization: `Bearer ${token()}` } })
      .then((res) => (res.ok ? res.blob() : null))
      .then((blob) => {
        if (!blob) return
        const reader = new FileReader()
        reader.onload = () => {
          img.src = reader.result
        }
        reader.readAsDataURL(blob)
      })
      .catch(() => {})
    return img
  }

  async function lift(block, button) {
    if (!window.confirm(`Lift block ${block.id}? The picture can then be uploaded again.`)) return
    button.disabled = true
    const res = await api(`/api/admin/blocks/${block.id}`, { method: 'DELETE' })
    if (res.status !== 200) {
      button.disabled = false
      return say(res.data.error || `Failed (${res.status}).`, true)
    }
    await load()
    say(`Block ${block.id} lifted.`, false)
  }

  function item(block) {
    const button = el('button', { type: 'button', class: 'secondary', 'data-lift': block.id, text: 'Lift block' })
    button.addEventListener('click', () => lift(block, button))
    return el(
      'li',
      { class: 'report-item', 'data-block-id': block.id },
      thumbnail(block),
      el(
        'div',
        {},
        el('h2', { text: `#${block.id} · ${block.reason}` }),
        el('p', {
          class: 'muted',
          text: `${block.source}${block.imageId ? ` · image ${block.imageId}` : ''}${block.reportId ? ` · report #${block.reportId}` : ''} · ${when(block.createdAt)}`,
        }),
        el('p', { class: 'muted', text: block.phash ? `Perceptual hash ${block.phash}` : 'Blocked by its bytes only' }),
        el('div', { class: 'actions' }, button),
      ),
    )
  }

  async function load() {
    say('Loading…', false)
    const res = await api(`/api/admin/blocks?page=${state.page}&limit=${LIMIT}`)
    if (res.status === 401) return signOut('Your session has expired.')
    if (res.status === 403) return signOut('Only administrators can see the blocklist.')
    if (res.status !== 200) return say(res.data.error || `Failed (${res.status}).`, true)
    const { blocks, total, pages } = res.data
    if (state.page > 1 && blocks.length === 0 && state.page > pages) {
      state.page = Math.max(1, pages)
      return load()
    }
    state.pages = pages
    list.replaceChildren(...blocks.map(item))
    say(total === 0 ? 'No blocked pictures.' : `${total} blocked picture${total === 1 ? '' : 's'}.`, false)
    prev.disabled = state.page <= 1
    next.disabled = state.page >= pages
    pageLabel.textContent = pages > 1 ? `Page ${state.page} of ${pages}` : ''
    prev.parentElement.hidden = pages <= 1
  }

  prev.addEventListener('click', () => {
    state.page -= 1
    load()
  })
  next.addEventListener('click', () => {
    state.page += 1
    load()
  })
  if (!token()) return signOut()
  app.hidden = false
  load()
})()
