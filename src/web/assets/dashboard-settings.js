// The dashboard's Settings tab: the private-account switch and email verification.
// Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { $, state, call, say } = d

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

  d.loaders.settings = renderSettings
})()
