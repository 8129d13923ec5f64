// The viewer page's "Report this image" form: sends it to POST /api/reports (no account needed).
;(() => {
  'use strict'
  const form = document.querySelector('form[data-report-image]')
  if (!form || !window.imghost) return
  const { api, say } = window.imghost
  const status = form.querySelector('[data-report-status]')
  const button = form.querySelector('button[type="submit"]')

  function show(message, isError) {
    say(status, message, isError)
    status.hidden = false
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const data = new FormData(form)
    const body = { imageId: form.getAttribute('data-report-image'), reason: data.get('reason') }
    const details = String(data.get('details') || '').trim()
    if (details) body.details = details
    button.disabled = true
    // Without the session: anyone may report, and a report names no account.
    const res = await api('/api/reports', { method: 'POST', body, auth: false })
    if (res.status === 201) {
      show('Thank you: the report was sent to the moderators.', false)
      for (const field of form.querySelectorAll('select, textarea, button')) field.disabled = true
      return
    }
    button.disabled = false
    if (res.status === 429) return show('Too many reports from your address: please try again later.', true)
    // The server's reason, or the network's failure.
    show(res.data.error, true)
  })
})()
