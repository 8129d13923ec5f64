// Small progressive enhancements shared by every page. No inline scripts anywhere: the CSP forbids them.
;(() => {
  'use strict'

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text)
      return true
    } catch {
      return false
    }
  }

  // <button data-copy="input-id">: copies that input's value.
  document.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null
    if (!button) return
    const input = document.getElementById(button.getAttribute('data-copy'))
    if (!input) return
    let ok = await copyText(input.value)
    if (!ok) {
      input.select()
      ok = document.execCommand('copy')
    }
    const label = button.textContent
    button.textContent = ok ? 'Copied!' : 'Press Ctrl+C'
    setTimeout(() => (button.textContent = label), 1500)
  })

  // Mature images are not in the markup (so link previews never show them): <img data-preview> gets its blurred
  // thumbnail here, and <button data-reveal> inside a .nsfw container swaps in the original (data-src) and unblurs it.
  function loadPreviews() {
    for (const img of document.querySelectorAll('img[data-preview]:not([src])')) img.src = img.getAttribute('data-preview')
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', loadPreviews)
  else loadPreviews()

  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-reveal]') : null
    if (!button) return
    const box = button.closest('.nsfw')
    if (!box) return
    for (const img of box.querySelectorAll('img[data-src]')) img.src = img.getAttribute('data-src')
    box.classList.remove('is-hidden')
  })

  // Read-only code fields select their whole text on focus, for a quick manual copy.
  document.addEventListener('focusin', (event) => {
    const el = event.target
    if (el instanceof HTMLInputElement && el.readOnly) el.select()
  })

  // The album password form: keep the typed password out of the URL and history; show the pending state.
  document.addEventListener('submit', (event) => {
    const form = event.target
    if (!(form instanceof HTMLFormElement) || !form.matches('.password-form')) return
    const button = form.querySelector('button[type="submit"]')
    if (button) {
      button.disabled = true
      button.textContent = 'Opening…'
    }
  })
})()

// Coming back to a page from the history restores it as it was: re-enable a form button left disabled.
window.addEventListener('pageshow', () => {
  for (const button of document.querySelectorAll('.password-form button[type="submit"]')) {
    button.disabled = false
    button.textContent = 'Open album'
  }
})
