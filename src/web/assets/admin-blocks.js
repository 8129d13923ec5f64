// /admin/blocks: lists blocked pictures (GET /api/admin/blocks) and lifts a block (DELETE /api/admin/blocks/:id).
// Uses the session JWT of the web UI (site.js). Text goes in via textContent only.
;(() => {
  'use strict'
  const root = document.querySelector('[data-admin-blocks]')
  if (!root || !window.imghost) return
  const { token, el, api, utcMinute: when } = window.imghost
  const LIMIT = 20

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
      return list.say(res.data.error || `Failed (${res.status}).`, true)
    }
    await list.load()
    list.say(`Block ${block.id} lifted.`, false)
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

  const list = window.imghost.adminList(root, 'blocks', {
    state: { page: 1, pages: 0 },
    path: (state) => `/api/admin/blocks?page=${state.page}&limit=${LIMIT}`,
    items: (data) => data.blocks,
    item,
    summary: (total) => (total === 0 ? 'No blocked pictures.' : `${total} blocked picture${total === 1 ? '' : 's'}.`),
    forbidden: 'Only administrators can see the blocklist.',
  })
})()
