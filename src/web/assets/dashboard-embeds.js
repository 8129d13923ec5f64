// The dashboard's Embed profiles tab, with a live preview; also fills the embed select of the Images tab.
// Loaded after dashboard.js, whose shared part it uses.
;(() => {
  'use strict'
  const d = window.imghost?.dashboard
  if (!d) return
  const { size, el } = window.imghost
  const { $, config, state, call, say, formError } = d

  const embedForm = $('embed-form')
  const FIELDS = ['name', 'site_name', 'author_name', 'author_url', 'title', 'description', 'color']
  let editing = null // the profile being edited, or null when creating
  // The rules come with the page: the colour field's pattern and the placeholder names.
  const COLOR = new RegExp(`^${embedForm.elements.color.pattern}$`)
  const PLACEHOLDER = new RegExp(`\\{(${config.placeholders.join('|')})\\}`, 'g')

  const SAMPLE = {
    filename: 'sunset.jpg',
    id: 'AbC123xY',
    width: 1920,
    height: 1080,
    size: 2516582,
    mime: 'image/jpeg',
    views: 42,
  }
  function fill(text) {
    if (!text) return ''
    const values = {
      ...SAMPLE,
      size: size(SAMPLE.size),
      date: new Date().toISOString().slice(0, 10),
      username: state.user ? state.user.username : 'you',
    }
    return text.replace(PLACEHOLDER, (_, name) => String(values[name]))
  }

  function updatePreview() {
    const v = (name) => embedForm.elements[name].value.trim()
    const color = COLOR.test(v('color')) ? v('color') : config.siteColor
    $('embed-preview').style.borderLeftColor = color
    $('preview-link').textContent = `${config.publicUrl}/i/${SAMPLE.id}`
    $('preview-user').textContent = state.user ? state.user.username : 'you'
    $('ep-site').textContent = fill(v('site_name')) || config.siteName
    const author = fill(v('author_name'))
    $('ep-author').textContent = author
    $('ep-author').hidden = !author
    $('ep-author').classList.toggle('is-link', !!v('author_url'))
    $('ep-title').textContent = fill(v('title')) || SAMPLE.filename
    $('ep-desc').textContent = fill(v('description')) || `${SAMPLE.width}×${SAMPLE.height} · ${size(SAMPLE.size)}`
  }
  embedForm.addEventListener('input', (event) => {
    if (event.target.id === 'embed-color-picker') embedForm.elements.color.value = event.target.value
    if (event.target.id === 'embed-color' && COLOR.test(event.target.value))
      $('embed-color-picker').value = event.target.value.toLowerCase()
    updatePreview()
  })

  function resetEmbedForm() {
    editing = null
    embedForm.reset()
    $('embed-color-picker').value = config.siteColor
    $('embed-form-title').textContent = 'New profile'
    $('embed-submit').textContent = 'Create profile'
    $('embed-cancel').hidden = true
    formError(embedForm, '')
    updateLimit()
    updatePreview()
  }

  function updateLimit() {
    const n = state.profiles.length
    $('embed-count').textContent = `${n} of ${config.maxEmbeds} profiles used.`
    const full = !editing && n >= config.maxEmbeds
    $('embed-submit').disabled = full
    if (full)
      formError(
        embedForm,
        `You have ${config.maxEmbeds} profiles, the most allowed. Delete one to create another, or edit one.`,
      )
  }

  async function loadProfiles() {
    const res = await call('/api/embeds')
    if (!res.ok) return say('embeds-status', res.data.error, true)
    state.profiles = res.data.profiles
    const list = $('embed-list')
    list.replaceChildren(
      ...state.profiles.map((profile) => {
        const swatch = el('span', { class: 'swatch', 'aria-hidden': 'true' })
        swatch.style.backgroundColor = profile.color || config.siteColor
        const edit = el('button', { type: 'button', class: 'secondary small' }, 'Edit')
        const del = el('button', { type: 'button', class: 'danger small' }, 'Delete')
        edit.addEventListener('click', () => {
          editing = profile
          for (const name of FIELDS) embedForm.elements[name].value = profile[name] || ''
          if (profile.color) $('embed-color-picker').value = profile.color.toLowerCase()
          $('embed-form-title').textContent = `Edit “${profile.name}”`
          $('embed-submit').textContent = 'Save profile'
          $('embed-cancel').hidden = false
          formError(embedForm, '')
          updateLimit()
          updatePreview()
          embedForm.elements.name.focus()
        })
        del.addEventListener('click', async () => {
          if (!confirm(`Delete the embed profile “${profile.name}”? Images using it go back to the default embed.`))
            return
          const r = await call(`/api/embeds/${profile.id}`, { method: 'DELETE' })
          say('embeds-status', r.ok ? `Profile “${profile.name}” deleted.` : r.data.error, !r.ok)
          if (editing && editing.id === profile.id) resetEmbedForm()
          loadProfiles()
        })
        return el(
          'li',
          { class: 'row', 'data-profile': profile.id },
          swatch,
          el(
            'div',
            { class: 'row-main' },
            el('span', { class: 'row-title' }, profile.name),
            el(
              'p',
              { class: 'muted small' },
              [profile.site_name, profile.title, profile.author_name].filter(Boolean).join(' · ') || 'Default texts',
            ),
          ),
          el('div', { class: 'row-actions' }, edit, del),
        )
      }),
    )
    if (!state.profiles.length)
      list.append(el('li', { class: 'empty muted' }, 'No embed profiles yet: links use the default embed.'))
    const select = $('bulk-embed')
    const current = select.value
    select.replaceChildren(
      el('option', { value: '' }, 'Default embed'),
      ...state.profiles.map((p) => el('option', { value: String(p.id) }, p.name)),
    )
    select.value = state.profiles.some((p) => String(p.id) === current) ? current : ''
    updateLimit()
  }

  embedForm.addEventListener('submit', async (event) => {
    event.preventDefault()
    formError(embedForm, '')
    const body = {}
    for (const name of FIELDS) {
      const value = embedForm.elements[name].value.trim()
      body[name] = name === 'name' ? value : value || null
    }
    const res = editing
      ? await call(`/api/embeds/${editing.id}`, { method: 'PUT', body })
      : await call('/api/embeds', { method: 'POST', body })
    if (!res.ok) return formError(embedForm, res.data.error)
    say(
      'embeds-status',
      `Profile “${res.data.profile.name}” ${editing ? 'saved' : 'created'}. Assign it to images from the Images tab.`,
    )
    resetEmbedForm()
    loadProfiles()
  })
  $('embed-cancel').addEventListener('click', resetEmbedForm)

  d.loaders.embeds = () => {
    updatePreview()
    return loadProfiles()
  }
  d.loadProfiles = loadProfiles
})()
