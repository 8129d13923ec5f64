// The dashboard's API keys tab, and the uploader configs (ShareX, shell, Flameshot) made by the server for a key.
// Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { el, NETWORK_ERROR } = window.imghost
  const { $, call, dateText, say, formError } = d

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
      return say(status, NETWORK_ERROR, true)
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
          d.albumOptions(block.querySelector('select[name="album"]'), 'No album')
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
    d.albumOptions(newKeyDownloads.querySelector('select[name="album"]'), 'No album')
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

  d.loaders.keys = loadKeys
})()
