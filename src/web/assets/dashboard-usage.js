// The dashboard's Usage tab: storage, limits and the upload window.
// Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { size, duration, el } = window.imghost
  const { $, call } = d

  let countdown = null
  async function loadUsage() {
    const res = await call('/api/account/usage')
    if (!res.ok) {
      $('storage-text').textContent = res.data.error
      return
    }
    const u = res.data
    const bar = $('storage-bar')
    if (u.storage.limit === null) {
      bar.hidden = true
      $('storage-text').textContent = `${size(u.storage.used)} used · no storage limit`
    } else {
      bar.hidden = false
      bar.max = u.storage.limit
      bar.value = u.storage.used
      const pct = u.storage.limit ? Math.min(100, (u.storage.used / u.storage.limit) * 100) : 0
      $('storage-text').textContent =
        `${size(u.storage.used)} of ${size(u.storage.limit)} used (${pct < 1 && pct > 0 ? '<1' : Math.round(pct)}%) · ${size(u.storage.remaining)} left`
    }
    const stat = (label, value) => [el('div', {}, el('dt', {}, label), el('dd', {}, value))]
    $('usage-stats').replaceChildren(
      ...stat('Images', String(u.totalImages)),
      ...stat('Largest file', u.limits.maxFileSize === null ? 'unlimited' : size(u.limits.maxFileSize)),
      ...stat(
        'Files per upload',
        u.limits.maxFilesPerUpload === null ? 'unlimited' : String(u.limits.maxFilesPerUpload),
      ),
      ...stat('Email', u.emailVerified ? 'verified' : 'not verified'),
    )
    const rate = u.rateLimit
    const windowBar = $('window-bar')
    windowBar.max = rate.limit
    windowBar.value = rate.used
    let left = rate.resetSeconds
    const tick = () => {
      $('window-text').textContent =
        `${rate.used} of ${rate.limit} uploads used in this ${rate.window} window · ${rate.remaining} left · ` +
        (rate.used ? `resets in ${duration(left)}` : 'the window starts with your next upload')
    }
    clearInterval(countdown)
    tick()
    if (rate.used) {
      countdown = setInterval(() => {
        left--
        if (left <= 0) {
          clearInterval(countdown)
          loadUsage()
        } else tick()
      }, 1000)
    }
  }

  d.loaders.usage = loadUsage
})()
