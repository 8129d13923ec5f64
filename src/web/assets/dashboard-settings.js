// The dashboard's Settings tab: the private-account switch, email verification, and leaving: the data's download and
// the account's deletion (a dialog that asks for the password or a two-factor code).
// Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { $, state, call, say } = d
  const { el, formError } = window.imghost

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

  // The export needs the session's token, which a plain link cannot send: fetched here, then saved as a file.
  $('export-data').addEventListener('click', async (event) => {
    event.preventDefault()
    say('export-status', 'Preparing your data…')
    const token = window.imghost.token()
    let res
    try {
      res = await fetch('/api/account/export', { headers: token ? { authorization: `Bearer ${token}` } : {} })
    } catch {
      return say('export-status', 'Network error: check your connection and try again.', true)
    }
    if (res.status === 401) return location.replace(`/login?next=${encodeURIComponent('/dashboard#settings')}`)
    if (!res.ok) {
      const error = (await res.json().catch(() => null))?.error
      return say('export-status', error || `The download failed (${res.status}).`, true)
    }
    const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') || '')?.[1] || 'export.zip'
    const url = URL.createObjectURL(await res.blob())
    const link = el('a', { href: url, download: name, hidden: true })
    document.body.append(link)
    link.click()
    link.remove()
    setTimeout(() => URL.revokeObjectURL(url), 60_000)
    say('export-status', `Downloaded ${name}.`)
  })

  const dialog = $('delete-dialog')
  const form = $('delete-form')
  // passkeys.js loads after this script: looked up when used.
  const passkeys = () => window.imghost.passkeys
  $('delete-account').addEventListener('click', () => {
    form.reset()
    formError(form, '')
    $('delete-passkey').hidden = !passkeys()?.supported()
    dialog.showModal()
    $('delete-password').focus()
  })
  $('delete-cancel').addEventListener('click', () => dialog.close())
  // Closed by Cancel or Escape: back to the button that opened it.
  dialog.addEventListener('close', () => $('delete-account').focus())

  /** Sends the deletion with its confirmation; on success the account is gone, and with it this browser's session. */
  async function deleteWith(proof, focusOnError) {
    const res = await call('/api/account', { method: 'DELETE', body: proof })
    if (!res.ok) {
      formError(form, res.data.error)
      return $(focusOnError).focus()
    }
    window.imghost.setToken(null)
    location.replace('/')
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const password = $('delete-password').value
    const code = $('delete-code').value.trim()
    if (!password && !code) {
      formError(form, 'Enter your password (or a two-factor code) to confirm.')
      return $('delete-password').focus()
    }
    await deleteWith(password ? { password } : { code }, password ? 'delete-password' : 'delete-code')
  })
  $('delete-passkey').addEventListener('click', async () => {
    formError(form, '')
    const options = await call('/api/account/delete/options', { method: 'POST' })
    if (!options.ok) return formError(form, options.data.error)
    let passkey
    try {
      passkey = await passkeys().get(options.data.options)
    } catch (error) {
      return formError(form, passkeys().failure(error))
    }
    await deleteWith({ passkey }, 'delete-passkey')
  })

  d.loaders.settings = renderSettings
})()
