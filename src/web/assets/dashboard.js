// The account dashboard: a small client-side app over the JSON API, authenticated by the JWT in localStorage.
// Sections (tabs, by URL hash): images, albums, API keys, embed profiles, usage, settings, security, each in its own script
// (dashboard-<tab>.js, loaded after this one); this is their shared part: session, state, helpers and the tab switch.
;(() => {
  'use strict'
  const root = document.getElementById('dashboard')
  if (!root || !window.imghost) return
  const { api, token, el, formError } = window.imghost

  if (!token()) {
    location.replace(`/login?next=${encodeURIComponent(`/dashboard${location.hash}`)}`)
    return
  }

  const $ = (id) => document.getElementById(id)
  const config = {
    siteName: root.dataset.siteName,
    siteColor: root.dataset.siteColor,
    publicUrl: root.dataset.publicUrl,
    maxEmbeds: Number(root.dataset.maxEmbeds),
    maxBulk: Number(root.dataset.maxBulk),
    placeholders: root.dataset.placeholders.split(' '),
    shareCodes: JSON.parse(root.dataset.shareCodes),
  }
  const state = {
    user: null,
    albums: [],
    profiles: [],
    images: { page: 1, pages: 0, items: [], filter: { visibility: '', nsfw: '', q: '' }, order: 'date-desc' },
    selected: new Set(),
  }

  /** The API, but a 401 (expired or revoked session) goes back to the login page. */
  async function call(path, opts) {
    const res = await api(path, opts)
    if (res.status === 401) {
      location.replace(`/login?next=${encodeURIComponent(`/dashboard${location.hash}`)}`)
      // The page is going away: whatever waited for this answer never continues.
      return new Promise(() => {})
    }
    return res
  }

  /** Runs `fn` over `items`, a few at a time. */
  async function eachLimited(items, limit, fn) {
    const results = new Array(items.length)
    let next = 0
    const worker = async () => {
      while (next < items.length) {
        const i = next++
        results[i] = await fn(items[i])
      }
    }
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
    return results
  }

  const dateText = (iso) =>
    iso ? new Date(iso).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' }) : ''
  const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`

  /** Shows a status message in the element (or the element with that id). */
  function say(target, text, isError = false) {
    window.imghost.say(typeof target === 'string' ? $(target) : target, text, isError)
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Tabs.

  const TABS = ['images', 'albums', 'keys', 'embeds', 'usage', 'settings', 'security']
  const loaders = {}
  function showTab() {
    const name = TABS.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'images'
    for (const panel of document.querySelectorAll('[data-panel]')) panel.hidden = panel.dataset.panel !== name
    for (const tab of document.querySelectorAll('[data-tab]')) {
      if (tab.dataset.tab === name) tab.setAttribute('aria-current', 'page')
      else tab.removeAttribute('aria-current')
    }
    if (loaders[name]) loaders[name]()
  }
  window.addEventListener('hashchange', showTab)

  // ---------------------------------------------------------------------------------------------------------------
  // The account.

  async function loadUser() {
    const res = await call('/api/auth/me')
    if (!res.ok) {
      $('dash-user').textContent = res.data.error
      return false
    }
    state.user = res.data.user
    const u = state.user
    $('dash-user').replaceChildren(
      'Logged in as ',
      el('a', { href: `/u/${encodeURIComponent(u.username)}` }, u.username),
      ` · ${u.email} · `,
      // An admin's way to the reports queue.
      ...(u.role === 'admin' ? ['admin (', el('a', { href: '/admin/reports' }, 'abuse reports'), ') · '] : []),
      el('a', { href: '/logout' }, 'Log out'),
    )
    const banner = $('dash-banner')
    const welcome = new URLSearchParams(location.search).get('welcome')
    if (!u.emailVerified) {
      banner.replaceChildren(
        el('strong', {}, welcome ? 'Welcome! ' : ''),
        'Verify your email address to raise your storage limit: open the link in the email we sent you, or ',
        el('a', { href: '/verify' }, 'enter the token'),
        '.',
      )
      banner.hidden = false
    } else if (welcome) {
      banner.textContent = 'Welcome!'
      banner.hidden = false
    }
    return true
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The tabs, one script each (dashboard-<tab>.js), register their loaders here.

  const d = { $, config, state, call, eachLimited, dateText, plural, say, formError, loaders }
  window.imghost.dashboard = d
  // Deferred scripts all run before DOMContentLoaded: the dashboard starts once every tab script is in.
  document.addEventListener('DOMContentLoaded', async () => {
    if (!(await loadUser())) return
    // The selects of the image toolbar need the albums and profiles whatever the tab.
    await Promise.all([d.loadAlbums(), d.loadProfiles()])
    showTab()
  })
})()
