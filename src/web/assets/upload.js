// The upload page: file picker, drag and drop, paste; a queue with one request and one progress bar per file;
// the links of each uploaded image. Every file is a separate upload (with the JWT when logged in), so one refused file
// never takes the others down with it and each gets its own progress bar: one POST /api/upload, or, above the page's
// tus threshold, a resumable tus upload to /api/tus (tus-upload.js) that survives proxy body limits and lost connections.
;(() => {
  'use strict'
  const root = document.getElementById('upload')
  if (!root || !window.imghost) return
  const { api, token, setToken, size, say, duration, el, shareFields } = window.imghost

  const $ = (id) => document.getElementById(id)
  const input = $('file-input')
  const dropzone = $('dropzone')
  const startButton = $('upload-start')
  const clearButton = $('upload-clear')
  const list = $('upload-list')
  const status = $('upload-status')
  const limitsText = $('limits-text')
  const accountText = $('account-text')
  const albumOption = $('album-option')
  const albumSelect = $('album-select')
  const nsfwBox = $('nsfw')

  const mimes = new Set(root.dataset.mimes.split(' '))
  const extensions = new Set(root.dataset.extensions.split(' '))
  const FORMAT_NAMES = root.dataset.formatNames
  const SHARE = JSON.parse(root.dataset.shareCodes)
  const DELETE_LINK = { key: 'delete', label: 'Delete link (keep it private)', template: '{deletePage}' }
  const CONCURRENCY = 3
  const tusThreshold = Number(root.dataset.tusThreshold)

  let limits = { maxFiles: Number(root.dataset.maxFiles), maxSize: Number(root.dataset.maxSize) }
  let session = null // the account usage object when logged in
  let running = false
  let halted = false
  let seq = 0
  /** { id, file, state: queued|invalid|uploading|done|failed|deleted, node, bar, message, result } */
  const entries = []

  // ---------------------------------------------------------------------------------------------------------------
  // Account: a logged-in visitor gets the account's limits and its albums.

  async function loadAccount() {
    if (!token()) return
    const res = await api('/api/account/usage')
    if (!res.ok) {
      if (res.status === 401) {
        accountText.replaceChildren(
          'Your session has expired, so uploads are anonymous. ',
          el('a', { href: '/login?next=/' }, 'Log in again'),
          '.',
        )
      }
      return
    }
    session = res.data
    limits = {
      maxFiles: session.limits.maxFilesPerUpload ?? Infinity,
      maxSize: session.limits.maxFileSize ?? Infinity,
    }
    const rate = session.rateLimit
    const sizeText = limits.maxSize === Infinity ? 'no size limit' : `${size(limits.maxSize)} each`
    const filesText = limits.maxFiles === Infinity ? 'any number of files' : `up to ${limits.maxFiles} files at a time`
    limitsText.textContent = `${FORMAT_NAMES}. ${filesText[0].toUpperCase()}${filesText.slice(1)}, ${sizeText}.`
    accountText.replaceChildren(
      'Logged in as ',
      el('strong', {}, session.username),
      `: ${rate.remaining} of ${rate.limit} uploads left this hour. Your images appear in your `,
      el('a', { href: '/dashboard' }, 'dashboard'),
      '.',
    )
    recheckQueue()
    const [me, albums] = await Promise.all([api('/api/auth/me'), api('/api/albums')])
    if (me.ok && me.data.user.privateAccount) {
      // The server makes every upload of a private account private: say so instead of offering a choice it ignores.
      document.querySelector('input[name="visibility"][value="private"]').checked = true
      document.querySelector('input[name="visibility"][value="public"]').disabled = true
      accountText.append(
        ' Your account is private, so every upload is private (change it in ',
        el('a', { href: '/dashboard#settings' }, 'settings'),
        ').',
      )
    }
    if (albums.ok && albums.data.albums.length) {
      for (const album of albums.data.albums) albumSelect.append(el('option', { value: album.id }, album.title))
      albumOption.hidden = false
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The queue.

  function extensionOf(name) {
    const dot = name.lastIndexOf('.')
    return dot < 0 ? '' : name.slice(dot + 1).toLowerCase()
  }

  function problemOf(file) {
    if (!mimes.has(file.type) && !extensions.has(extensionOf(file.name)))
      return `Not a supported image type. Supported: ${FORMAT_NAMES}.`
    if (file.size === 0) return 'The file is empty.'
    if (file.size > limits.maxSize)
      return `Too large: ${size(file.size)}, the limit is ${size(limits.maxSize)} per file.`
    return null
  }

  const waiting = () => entries.filter((e) => e.state === 'queued')

  /** Marks files beyond the per-upload count as refused, and lets them back in when room appears. */
  function recheckQueue() {
    let room = limits.maxFiles
    for (const entry of entries) {
      if (entry.state !== 'queued' && !(entry.state === 'invalid' && entry.countRefused)) continue
      const problem = problemOf(entry.file)
      if (problem) {
        setState(entry, 'invalid', problem)
        entry.countRefused = false
      } else if (room <= 0) {
        setState(
          entry,
          'invalid',
          `Too many files: at most ${limits.maxFiles} at a time. Upload these first, then add more.`,
        )
        entry.countRefused = true
      } else {
        room--
        if (entry.state !== 'queued') setState(entry, 'queued', 'Ready to upload')
        entry.countRefused = false
      }
    }
    updateControls()
  }

  function addFiles(files) {
    const added = []
    for (const file of files) {
      const entry = { id: ++seq, file, state: 'queued' }
      entry.node = renderEntry(entry)
      list.append(entry.node)
      entries.push(entry)
      added.push(entry)
      setState(entry, 'queued', 'Ready to upload')
    }
    if (!added.length) return
    halted = false
    recheckQueue()
    const ready = added.filter((e) => e.state === 'queued').length
    const refused = added.length - ready
    announce(
      `${added.length} file${added.length === 1 ? '' : 's'} added` +
        (refused ? `, ${refused} cannot be uploaded (see below)` : '') +
        (ready ? '. Press Upload to send them.' : '.'),
    )
  }

  function removeEntry(entry) {
    const i = entries.indexOf(entry)
    if (i >= 0) entries.splice(i, 1)
    entry.node.remove()
    recheckQueue()
  }

  function announce(text, isError = false) {
    say(status, text, isError)
  }

  function updateControls() {
    clearButton.hidden = !entries.some((e) => e.state !== 'uploading')
    startButton.textContent = running ? 'Uploading…' : 'Upload'
    startButton.setAttribute('aria-busy', running ? 'true' : 'false')
    const allLinks = $('all-links')
    const done = entries.filter((e) => e.state === 'done')
    if (allLinks) {
      allLinks.value = done.map((e) => e.result.url).join('\n')
      allLinks.closest('.all-links').hidden = done.length < 2
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Rendering one file.

  function renderEntry(entry) {
    const name = entry.file.name || 'pasted image'
    entry.bar = el('progress', { max: 100, value: 0, 'aria-label': `Upload progress of ${name}` })
    entry.message = el('p', { class: 'item-message' })
    entry.actions = el('span', { class: 'item-actions' })
    return el(
      'li',
      { class: 'upload-item', 'data-state': 'queued' },
      el(
        'div',
        { class: 'item-head' },
        el('span', { class: 'item-name' }, name),
        el('span', { class: 'item-size muted' }, size(entry.file.size)),
        entry.actions,
      ),
      entry.bar,
      entry.message,
    )
  }

  function actionButton(label, name, onClick) {
    const button = el('button', { type: 'button', class: 'secondary small', 'aria-label': `${label} ${name}` }, label)
    button.addEventListener('click', onClick)
    return button
  }

  function setState(entry, state, message) {
    entry.state = state
    entry.node.setAttribute('data-state', state)
    entry.message.textContent = message
    entry.message.classList.toggle('error', state === 'invalid' || state === 'failed')
    entry.message.setAttribute('role', state === 'failed' ? 'alert' : 'status')
    const name = entry.file.name || 'pasted image'
    entry.actions.replaceChildren()
    if (state === 'queued' || state === 'invalid')
      entry.actions.append(actionButton('Remove', name, () => removeEntry(entry)))
    if (state === 'failed') {
      entry.actions.append(
        actionButton('Retry', name, () => {
          entry.bar.value = 0
          setState(entry, 'queued', 'Ready to upload')
          halted = false
          recheckQueue()
          start()
        }),
        actionButton('Remove', name, () => removeEntry(entry)),
      )
    }
    entry.bar.hidden = state === 'invalid' || state === 'deleted' || state === 'failed'
  }

  function renderResult(entry, image) {
    entry.result = image
    const prefix = `r${entry.id}`
    const thumb = el('img', { src: image.thumbnail, alt: image.filename || 'Uploaded image', loading: 'lazy' })
    const thumbLink = el(
      'a',
      { class: image.nsfw ? 'thumb nsfw-thumb' : 'thumb', href: image.viewer },
      thumb,
      image.nsfw ? el('span', { class: 'badge' }, 'NSFW') : null,
    )
    const preview = el('div', { class: image.nsfw ? 'result-thumb nsfw is-hidden' : 'result-thumb' }, thumbLink)
    if (image.nsfw)
      preview.append(
        el(
          'button',
          { type: 'button', class: 'reveal', 'data-reveal': true, 'aria-label': `Show mature image ${image.filename}` },
          'Show',
        ),
      )

    // The delete page link goes with the share codes: an anonymous uploader has no other way to delete later.
    const fields = shareFields(SHARE, image, prefix, image.deletePage ? [DELETE_LINK] : [])
    const actions = el('p', { class: 'result-actions' }, el('a', { href: image.viewer }, 'Open the viewer page'))
    if (image.deleteToken || session) {
      const del = el('button', { type: 'button', class: 'link danger' }, 'Delete this image')
      del.addEventListener('click', () => deleteUpload(entry, del))
      actions.append(' · ', del)
    }
    const hint = image.deleteToken
      ? el(
          'p',
          { class: 'muted save-hint' },
          'Save these links now: they are not shown again, and only the delete link can remove the image later.',
        )
      : null
    const result = el('div', { class: 'result' }, preview, el('div', { class: 'share' }, fields, hint, actions))
    entry.node.append(result)
  }

  async function deleteUpload(entry, button) {
    if (!confirm(`Delete ${entry.result.filename || 'this image'}? Its links stop working at once.`)) return
    button.disabled = true
    const image = entry.result
    const res = image.deleteToken
      ? await api(`/api/v1/image/${image.id}`, {
          method: 'DELETE',
          headers: { 'x-delete-token': image.deleteToken },
          auth: false,
        })
      : await api(`/api/images/${image.id}`, { method: 'DELETE' })
    if (!res.ok) {
      button.disabled = false
      entry.message.textContent = `Could not delete: ${res.data.error}`
      entry.message.classList.add('error')
      return
    }
    entry.node.querySelector('.result').remove()
    setState(entry, 'deleted', 'Deleted.')
    updateControls()
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Sending.

  function options() {
    const visibility = document.querySelector('input[name="visibility"]:checked')
    return {
      visibility: visibility ? visibility.value : 'public',
      nsfw: nsfwBox.checked,
      album: session ? albumSelect.value : '',
      expires: $('expires-select').value,
    }
  }

  function showProgress(entry, sent, total) {
    entry.bar.value = Math.round((sent / total) * 100)
    if (sent === total) entry.message.textContent = 'Processing…'
  }

  /** One multipart POST /api/upload; resolves with { ok, status, data, retryAfter } (status 0: no answer). */
  function send(entry, opts) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest()
      xhr.open('POST', '/api/upload')
      xhr.setRequestHeader('accept', 'application/json')
      const jwt = token()
      if (jwt) xhr.setRequestHeader('authorization', `Bearer ${jwt}`)
      xhr.upload.addEventListener('progress', (event) => {
        if (event.lengthComputable) showProgress(entry, event.loaded, event.total)
      })
      xhr.upload.addEventListener('load', () => showProgress(entry, 1, 1))
      xhr.addEventListener('load', () => {
        let data = null
        try {
          data = JSON.parse(xhr.responseText)
        } catch {
          // Not JSON: handled below by the status.
        }
        resolve({ ok: xhr.status === 201, status: xhr.status, data, retryAfter: xhr.getResponseHeader('retry-after') })
      })
      xhr.addEventListener('error', () => resolve({ ok: false, status: 0, data: null, retryAfter: null }))
      xhr.addEventListener('abort', () => resolve({ ok: false, status: 0, data: null, retryAfter: null }))
      const form = new FormData()
      form.append('visibility', opts.visibility)
      if (opts.nsfw) form.append('nsfw', 'true')
      if (opts.album) form.append('album', opts.album)
      if (opts.expires) form.append('expires', opts.expires)
      form.append('file', entry.file, entry.file.name || 'pasted.png')
      xhr.send(form)
    })
  }

  /**
   * A resumable upload through tus; resolves like send(). The last PATCH answers with the same object as a multipart
   * upload; a refusal carries the server's { error, retryAfter } as its body. Retrying the same file resumes it.
   */
  async function sendTus(entry, opts) {
    const jwt = token()
    try {
      const data = await window.tusUpload(entry.file, {
        headers: jwt ? { Authorization: `Bearer ${jwt}` } : {},
        metadata: {
          visibility: opts.visibility,
          nsfw: opts.nsfw ? 'true' : '',
          album: opts.album,
          expires: opts.expires,
        },
        onProgress: (sent, total) => showProgress(entry, sent, total),
      })
      return { ok: true, status: 200, data, retryAfter: null }
    } catch (error) {
      return {
        ok: false,
        status: typeof error.status === 'number' ? error.status : 0,
        data: error.body || null,
        retryAfter: null,
      }
    }
  }

  function failureMessage(res) {
    const error = res.data && typeof res.data.error === 'string' ? res.data.error : null
    switch (res.status) {
      case 0:
        return 'Network error: the upload did not reach the server. Check your connection and retry.'
      case 400:
        return error || 'The server refused this file.'
      case 401:
        return 'Your session has expired. Log in again, or retry to upload anonymously.'
      case 403:
        return error || 'This account may not upload.'
      case 413:
        return error || 'The file is too large, or your storage is full.'
      case 429: {
        const seconds = Number(res.retryAfter ?? res.data?.retryAfter)
        return `Upload limit reached. Try again in ${Number.isFinite(seconds) && seconds > 0 ? duration(seconds) : 'a while'}.`
      }
      default:
        return error || `Upload failed (${res.status}).`
    }
  }

  async function uploadOne(entry, opts) {
    setState(entry, 'uploading', 'Uploading…')
    entry.bar.value = 0
    const res = entry.file.size > tusThreshold ? await sendTus(entry, opts) : await send(entry, opts)
    if (res.ok && res.data) {
      const image = res.data.images ? res.data.images[0] : res.data
      const flagged = image.nsfw && !opts.nsfw ? ' · flagged as mature content by the automatic check' : ''
      setState(
        entry,
        'done',
        `Uploaded · ${image.width}×${image.height} · ${size(image.size)} · ${image.visibility}${flagged}`,
      )
      renderResult(entry, image)
      return
    }
    if (res.status === 401) {
      setToken(null)
      session = null
    }
    if (res.status === 429) halted = true
    setState(entry, 'failed', failureMessage(res))
    if (res.status === 429) announce(failureMessage(res), true)
  }

  async function start() {
    if (running) return
    if (!waiting().length) {
      announce(
        entries.length ? 'Nothing left to upload: add more images first.' : 'Choose, drop or paste some images first.',
        true,
      )
      return
    }
    running = true
    halted = false
    updateControls()
    announce('Uploading…')
    const opts = options()
    const worker = async () => {
      for (;;) {
        if (halted) return
        const entry = waiting()[0]
        if (!entry) return
        await uploadOne(entry, opts)
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    running = false
    recheckQueue()
    if (!halted) {
      const done = entries.filter((e) => e.state === 'done').length
      const failed = entries.filter((e) => e.state === 'failed').length
      announce(`${done} uploaded${failed ? `, ${failed} failed` : ''}.`, failed > 0)
    }
    updateControls()
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Inputs: picker, drag and drop anywhere on the page, paste.

  input.addEventListener('change', () => {
    addFiles([...input.files])
    input.value = ''
  })
  startButton.addEventListener('click', start)
  clearButton.addEventListener('click', () => {
    for (const entry of [...entries]) {
      if (entry.state !== 'uploading') {
        entries.splice(entries.indexOf(entry), 1)
        entry.node.remove()
      }
    }
    announce('')
    recheckQueue()
  })

  const hasFiles = (event) => event.dataTransfer && [...event.dataTransfer.types].includes('Files')
  let dragDepth = 0
  document.addEventListener('dragenter', (event) => {
    if (!hasFiles(event)) return
    dragDepth++
    dropzone.classList.add('dragging')
  })
  document.addEventListener('dragleave', () => {
    dragDepth = Math.max(0, dragDepth - 1)
    if (!dragDepth) dropzone.classList.remove('dragging')
  })
  document.addEventListener('dragover', (event) => {
    if (!hasFiles(event)) return
    event.preventDefault()
    event.dataTransfer.dropEffect = 'copy'
  })
  document.addEventListener('drop', (event) => {
    if (!event.dataTransfer?.files.length) return
    event.preventDefault()
    dragDepth = 0
    dropzone.classList.remove('dragging')
    addFiles([...event.dataTransfer.files])
  })

  document.addEventListener('paste', (event) => {
    const files = event.clipboardData ? [...event.clipboardData.files] : []
    if (!files.length) return
    event.preventDefault()
    const stamp = new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')
    addFiles(
      files.map((file, i) => {
        // Pasted screenshots are all called image.png: give each a name worth keeping.
        if (file.name && file.name !== 'image.png') return file
        const ext = (file.type.split('/')[1] || 'png').replace('jpeg', 'jpg').replace('svg+xml', 'svg')
        return new File([file], `pasted-${stamp}${files.length > 1 ? `-${i + 1}` : ''}.${ext}`, { type: file.type })
      }),
    )
  })

  // The "all links" box under the list, shown once two or more images are uploaded.
  list.after(
    el(
      'div',
      { class: 'all-links field', hidden: true },
      el('label', { for: 'all-links' }, 'All direct links'),
      el(
        'div',
        { class: 'copy-row' },
        el('textarea', { id: 'all-links', readonly: true, rows: 3 }),
        el('button', { type: 'button', class: 'secondary', 'data-copy': 'all-links' }, 'Copy all'),
      ),
    ),
  )

  loadAccount()
})()
