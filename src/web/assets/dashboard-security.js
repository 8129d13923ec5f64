// The dashboard's Security tab: passkeys here. The tab's other sections (sessions and password; two-factor) live in
// their own scripts, fill their containers (#security-sessions, #security-totp) and add their loader to
// d.securitySections, which opening the tab runs in order. Loaded after dashboard.js and passkeys.js.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { el, passkeys } = window.imghost
  const { $, call, dateText, say, formError } = d

  const TRANSPORTS = { internal: 'this device', hybrid: 'a phone nearby', usb: 'USB', nfc: 'NFC', ble: 'Bluetooth' }
  const form = $('passkey-create')

  async function loadPasskeys() {
    const res = await call('/api/auth/passkeys')
    const list = $('passkey-list')
    if (!res.ok) return list.replaceChildren(el('li', { class: 'error' }, res.data.error))
    list.replaceChildren(
      ...res.data.passkeys.map((passkey) => {
        const remove = el('button', { type: 'button', class: 'danger small' }, 'Remove')
        const via = passkey.transports.map((t) => TRANSPORTS[t] || t).join(', ')
        remove.addEventListener('click', async () => {
          if (!confirm(`Remove the passkey “${passkey.name}”? It will no longer sign you in.`)) return
          const r = await call(`/api/auth/passkeys/${passkey.id}`, { method: 'DELETE' })
          say('passkeys-status', r.ok ? `Removed “${passkey.name}”.` : r.data.error, !r.ok)
          loadPasskeys()
        })
        return el(
          'li',
          { class: 'row', 'data-passkey': passkey.id },
          el(
            'div',
            { class: 'row-main' },
            el('span', { class: 'row-title' }, passkey.name),
            el(
              'p',
              { class: 'muted small' },
              `added ${dateText(passkey.createdAt)} · ${passkey.lastUsedAt ? `last used ${dateText(passkey.lastUsedAt)}` : 'never used'}${via ? ` · ${via}` : ''}`,
            ),
          ),
          el('div', { class: 'row-actions' }, remove),
        )
      }),
    )
    if (!res.data.passkeys.length) list.append(el('li', { class: 'empty muted' }, 'No passkeys yet.'))
  }

  if (passkeys?.supported()) {
    const button = form.querySelector('button[type="submit"]')
    button.disabled = false
    form.addEventListener('submit', async (event) => {
      event.preventDefault()
      formError(form, '')
      say('passkeys-status', '')
      button.disabled = true
      try {
        const options = await call('/api/auth/passkeys/register/options', { method: 'POST' })
        if (!options.ok) return formError(form, options.data.error)
        let response
        try {
          response = await passkeys.create(options.data.options)
        } catch (error) {
          return formError(form, passkeys.failure(error))
        }
        const name = form.elements.name.value.trim()
        const res = await call('/api/auth/passkeys/register', { method: 'POST', body: { name, response } })
        if (!res.ok) return formError(form, res.data.error)
        form.reset()
        say('passkeys-status', `Added “${res.data.passkey.name}”: it signs you in from the login page.`)
        loadPasskeys()
      } finally {
        button.disabled = false
      }
    })
  } else {
    formError(form, 'This browser cannot make passkeys.')
  }

  /** The tab's sections, each a loader run when the tab opens. */
  d.securitySections = [loadPasskeys]
  d.loaders.security = () => {
    for (const load of d.securitySections) load()
  }
})()
