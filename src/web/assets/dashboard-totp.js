// The dashboard's two-factor (TOTP) card: set up (QR code and key), turn on with a code (then the recovery codes,
// shown once), turn off. Loaded after dashboard.js, whose shared part it uses; it loads whenever the panel holding the
// card is shown, whichever panel that is.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  const card = document.querySelector('[data-totp]')
  if (!d || !card) return
  const { el } = window.imghost
  const { $, call, say, formError, loaders } = d

  const enableForm = $('totp-enable-form')
  const disableForm = $('totp-disable-form')
  const recovery = $('totp-recovery')

  function show(on, left) {
    $('totp-status').textContent = on
      ? `Two-factor is on: logging in with your password also asks for a code from your authenticator app. ${d.plural(left, 'recovery code')} left.`
      : 'Two-factor is off: your password alone logs you in.'
    $('totp-setup').hidden = on
    disableForm.hidden = !on
    enableForm.hidden = true
  }

  async function load() {
    // The recovery codes stay on screen until "I saved them", whatever reloads meanwhile.
    if (!recovery.hidden) return
    const res = await call('/api/auth/totp')
    if (!res.ok) return say('totp-status', res.data.error, true)
    show(res.data.enabled, res.data.recoveryCodesLeft)
  }

  $('totp-setup').addEventListener('click', async () => {
    say('totp-action-status', '')
    const res = await call('/api/auth/totp/setup', { method: 'POST' })
    if (!res.ok) return say('totp-action-status', res.data.error, true)
    $('totp-qr').src = res.data.qrCode
    $('totp-secret').textContent = res.data.secret
    formError(enableForm, '')
    enableForm.reset()
    enableForm.hidden = false
    $('totp-setup').hidden = true
    $('totp-enable-code').focus()
  })

  $('totp-cancel').addEventListener('click', () => {
    enableForm.hidden = true
    $('totp-setup').hidden = false
  })

  enableForm.addEventListener('submit', async (event) => {
    event.preventDefault()
    formError(enableForm, '')
    const code = $('totp-enable-code').value.trim()
    const res = await call('/api/auth/totp/enable', { method: 'POST', body: { code } })
    if (!res.ok) return formError(enableForm, res.data.error)
    enableForm.hidden = true
    $('totp-recovery-list').replaceChildren(...res.data.recoveryCodes.map((c) => el('li', {}, el('code', {}, c))))
    recovery.hidden = false
    recovery.focus()
    $('totp-status').textContent = 'Two-factor is on.'
  })

  $('totp-recovery-done').addEventListener('click', () => {
    recovery.hidden = true
    $('totp-recovery-list').replaceChildren()
    load()
  })

  disableForm.addEventListener('submit', async (event) => {
    event.preventDefault()
    formError(disableForm, '')
    const code = $('totp-disable-code').value.trim()
    const res = await call('/api/auth/totp/disable', { method: 'POST', body: { code } })
    if (!res.ok) return formError(disableForm, res.data.error)
    disableForm.reset()
    say('totp-action-status', 'Two-factor is off.')
    load()
  })

  const panel = card.closest('[data-panel]').dataset.panel
  const previous = loaders[panel]
  loaders[panel] = () => {
    previous?.()
    load()
  }
})()
