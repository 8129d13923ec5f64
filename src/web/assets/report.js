// The viewer page's "Report this image" form: sends it to POST /api/reports (no account needed).
;(() => {
  'use strict'
  const form = document.querySelector('form[data-report-image]')
  if (!form) return
  const status = form.querySelector('[data-report-status]')
  const button = form.querySelector('button[type="submit"]')

  function show(message, isError) {
    status.textContent = message
    status.classList.toggle('error', !!isError)
    status.hidden = false
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const data = new FormData(form)
    const body = { imageId: form.getAttribute('data-report-image'), reason: data.get('reason') }
    const details = String(data.get('details') || '').trim()
    if (details) body.details = details
    button.disabled = true
    let res = null
    let answer = null
    try {
      res = await fetch('/api/reports', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
      })
      answer = await res.json().catch(() => null)
    } catch {
      // Network failure: shown below.
    }
    if (res && res.status === 201) {
      show('Thank you: the report was sent to the moderators.', false)
      for (const field of form.querySelectorAll('select, textarea, button')) field.disabled = true
      return
    }
    button.disabled = false
    if (!res) return show('Network error: check your connection and try again.', true)
    if (res.status === 429) return show('Too many reports from your address: please try again later.', true)
    show(
      (answer && typeof answer.error === 'string' && answer.error) || `The report could not be sent (${res.status}).`,
      true,
    )
  })
})()
