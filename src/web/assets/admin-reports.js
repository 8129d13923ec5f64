// /admin/reports: lists abuse reports and lets an admin dismiss them or delete the image (and ban its owner).
// Uses the session JWT of the web UI (site.js). Text goes in via textContent only.
;(() => {
  'use strict'
  const root = document.querySelector('[data-admin-reports]')
  if (!root || !window.imghost) return
  const { el, api, utcMinute: when } = window.imghost
  const LIMIT = 20

  async function act(report, kind) {
    const owner = report.owner ? report.owner.username : null
    if (kind === 'dismiss') {
      const res = await api(`/api/admin/reports/${report.id}/dismiss`, { method: 'POST' })
      return done(res, 'Report dismissed.')
    }
    const ban = kind === 'ban'
    const question = ban
      ? `Delete image ${report.imageId}, block the picture and ban ${owner}?`
      : `Delete image ${report.imageId} and block the picture from being uploaded again?`
    if (!window.confirm(question)) return
    const res = await api(`/api/admin/reports/${report.id}/action`, {
      method: 'POST',
      body: { deleteImage: true, banOwner: ban },
    })
    const closed = res.data?.reportsActioned
    done(
      res,
      `Image ${report.imageId} deleted${ban ? ` and ${owner} banned` : ''}; ${closed} report${closed === 1 ? '' : 's'} closed.`,
    )
  }

  async function done(res, success) {
    if (res.status !== 200) return list.say(res.data.error || `Failed (${res.status}).`, true)
    await list.load()
    list.say(success, false)
  }

  function item(report) {
    const image = report.image
    const preview = image
      ? el(
          'a',
          { href: image.viewer, target: '_blank', rel: 'noopener' },
          el('img', {
            class: image.nsfw ? 'report-thumb nsfw-thumb' : 'report-thumb',
            src: image.thumbnail,
            alt: image.filename,
            loading: 'lazy',
          }),
        )
      : el('div', { class: 'gone', text: 'Image gone' })
    const owner = report.owner
      ? el(
          'span',
          {},
          el('a', { href: `/u/${encodeURIComponent(report.owner.username)}`, text: report.owner.username }),
          report.owner.banned ? ' (banned)' : '',
        )
      : 'anonymous'
    const actions = el('div', { class: 'actions' })
    if (report.status === 'open')
      actions.append(el('button', { type: 'button', class: 'secondary', 'data-act': 'dismiss', text: 'Dismiss' }))
    if (report.status !== 'actioned') {
      actions.append(el('button', { type: 'button', class: 'danger', 'data-act': 'delete', text: 'Delete image' }))
      if (report.owner && !report.owner.banned)
        actions.append(
          el('button', { type: 'button', class: 'danger', 'data-act': 'ban', text: 'Delete image and ban owner' }),
        )
    }
    actions.addEventListener('click', (event) => {
      const button = event.target instanceof Element ? event.target.closest('[data-act]') : null
      if (!button) return
      for (const b of actions.querySelectorAll('button')) b.disabled = true
      act(report, button.getAttribute('data-act')).finally(() => {
        for (const b of actions.querySelectorAll('button')) b.disabled = false
      })
    })
    return el(
      'li',
      { class: 'report-item', 'data-report-id': report.id },
      preview,
      el(
        'div',
        {},
        el('h2', {}, `#${report.id} · ${report.reason}`),
        el(
          'p',
          { class: 'muted' },
          `Image ${report.imageId}${image ? ` (${image.filename}, ${image.visibility}${image.nsfw ? ', NSFW' : ''})` : ''} · by `,
          owner,
        ),
        el('p', {
          class: 'muted',
          text: `Reported ${when(report.createdAt)}${report.openReports > 1 ? ` · ${report.openReports} open reports about this image` : ''}${report.resolvedAt ? ` · ${report.status} ${when(report.resolvedAt)}` : ''}`,
        }),
        report.details ? el('p', { text: report.details }) : null,
        actions,
      ),
    )
  }

  const list = window.imghost.adminList(root, 'reports', {
    state: { status: 'open', page: 1, pages: 0 },
    path: (state) => `/api/admin/reports?status=${state.status}&page=${state.page}&limit=${LIMIT}`,
    items: (data) => data.reports,
    item,
    summary: (total, { status }) =>
      total === 0 ? `No ${status} reports.` : `${total} ${status} report${total === 1 ? '' : 's'}.`,
    forbidden: 'Only administrators can see reports.',
  })

  for (const button of root.querySelectorAll('[data-status-filter]')) {
    button.addEventListener('click', () => {
      list.state.status = button.getAttribute('data-status-filter')
      list.state.page = 1
      for (const b of root.querySelectorAll('[data-status-filter]'))
        b.setAttribute('aria-pressed', String(b === button))
      list.load()
    })
  }
})()
