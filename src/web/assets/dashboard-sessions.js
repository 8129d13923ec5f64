// The dashboard's "Password and sessions" section (in the Security tab): change the password, list the sessions (one
// per login) and end them. Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { el } = window.imghost
  const { $, call, dateText, say, formError } = d

  /** A browser's User-Agent, shortened to what tells devices apart. */
  function deviceOf(userAgent) {
    if (!userAgent) return 'Unknown device'
    const browser = /(Firefox|Edg|OPR|Chrome|Safari)\/[\d.]+/.exec(userAgent)?.[1]
    const system = /(Windows|Android|iPhone|iPad|Mac OS X|Linux)/.exec(userAgent)?.[1]
    const names = { Edg: 'Edge', OPR: 'Opera', 'Mac OS X': 'macOS' }
    if (!browser && !system) return userAgent.slice(0, 80)
    return [names[browser] || browser, system && `on ${names[system] || system}`].filter(Boolean).join(' ')
  }

  async function loadSessions() {
    const res = await call('/api/account/sessions')
    const list = $('session-list')
    if (!res.ok) return list.replaceChildren(el('li', { class: 'error' }, res.data.error))
    list.replaceChildren(
      ...res.data.sessions.map((session) => {
        const end = session.current
          ? el('a', { class: 'button secondary small', href: '/logout' }, 'Log out')
          : el('button', { type: 'button', class: 'danger small' }, 'End session')
        if (!session.current) {
          end.addEventListener('click', async () => {
            const r = await call(`/api/account/sessions/${encodeURIComponent(session.id)}`, { method: 'DELETE' })
            say('sessions-status', r.ok ? 'Session ended: its token no longer works.' : r.data.error, !r.ok)
            loadSessions()
          })
        }
        return el(
          'li',
          { class: 'row', 'data-session': session.id },
          el(
            'div',
            { class: 'row-main' },
            el('span', { class: 'row-title' }, deviceOf(session.userAgent), session.current ? ' (this browser)' : ''),
            el(
              'p',
              { class: 'muted small' },
              `${session.ip || 'unknown address'} · logged in ${dateText(session.createdAt)}`,
              session.lastUsedAt ? ` · last used ${dateText(session.lastUsedAt)}` : '',
            ),
          ),
          el('div', { class: 'row-actions' }, end),
        )
      }),
    )
  }

  $('password-form').addEventListener('submit', async (event) => {
    event.preventDefault()
    const form = event.target
    formError(form, '')
    say('password-status', '')
    const body = { currentPassword: form.elements.currentPassword.value, newPassword: form.elements.newPassword.value }
    const res = await call('/api/account/password', { method: 'PUT', body })
    if (!res.ok) return formError(form, res.data.error)
    form.reset()
    say('password-status', 'Password changed. Every other session has ended; this one stays.')
    loadSessions()
  })

  // A section of the Security tab (dashboard-security.js runs its sections when the tab opens).
  d.securitySections.push(loadSessions)
})()
