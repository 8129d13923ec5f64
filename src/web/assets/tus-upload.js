// Resumable uploads (tus 1.0) for the upload page: no library, no inline code. Loaded with <script src>; defines
// window.tusUpload(file, options) -> Promise<answer>, where answer is the same object POST /api/upload returns for
// one file. Chunks are sent with PATCH; progress comes from XMLHttpRequest; the upload URL is kept in localStorage,
// so calling tusUpload again with the same file (after an abort, a lost connection or a page reload) resumes it.
//
// options:
//   endpoint     '/api/tus' (default; JWT or anonymous) or '/api/v1/tus' (API key in headers)
//   chunkSize    bytes per PATCH, default 5 MiB
//   metadata     upload fields: { visibility, private, nsfw, album, expires } (strings); the file name is added
//   headers      extra request headers, e.g. { Authorization: 'Bearer <jwt>' }
//   onProgress   (bytesSent, bytesTotal) => void
//   signal       an AbortSignal: aborting stops the upload (it stays resumable) and rejects with an AbortError
//   retryDelays  waits (ms) before retrying after a network error, 423, 409 or 5xx; default [1000, 3000, 5000]
//   storage      where upload URLs are kept, default localStorage (anything with getItem/setItem/removeItem)
// A refusal (400, 401, 413, 429, ...) rejects with an Error carrying `status` and `body` (the server's { error }).
;(() => {
  'use strict'

  const TUS = { 'Tus-Resumable': '1.0.0' }
  const DEFAULT_CHUNK = 5 * 1024 * 1024

  function utf8Base64(text) {
    const bytes = new TextEncoder().encode(String(text))
    let binary = ''
    for (const byte of bytes) binary += String.fromCharCode(byte)
    return btoa(binary)
  }

  function encodeMetadata(fields) {
    return Object.entries(fields)
      .filter(([, value]) => value !== undefined && value !== null && value !== '')
      .map(([key, value]) => `${key} ${utf8Base64(value)}`)
      .join(',')
  }

  function abortError() {
    return new DOMException('Upload aborted', 'AbortError')
  }

  /** One request; resolves with { status, header(name), text } (status 0: no answer), or rejects when aborted. */
  function request(method, url, headers, body, signal, onUploadProgress) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError())
      const xhr = new XMLHttpRequest()
      xhr.open(method, url)
      for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value)
      if (onUploadProgress) xhr.upload.onprogress = (event) => onUploadProgress(event.loaded)
      const onAbort = () => xhr.abort()
      if (signal) signal.addEventListener('abort', onAbort, { once: true })
      const done = (result) => {
        if (signal) signal.removeEventListener('abort', onAbort)
        resolve(result)
      }
      xhr.onload = () =>
        done({ status: xhr.status, header: (name) => xhr.getResponseHeader(name), text: xhr.responseText })
      xhr.onerror = () => done({ status: 0, header: () => null, text: '' })
      xhr.onabort = () => {
        if (signal) signal.removeEventListener('abort', onAbort)
        reject(abortError())
      }
      xhr.send(body === undefined ? null : body)
    })
  }

  function failure(response, fallback) {
    let body = null
    try {
      body = JSON.parse(response.text)
    } catch {}
    const message =
      body && typeof body.error === 'string' ? body.error : `${fallback} (HTTP ${response.status || 'no answer'})`
    return Object.assign(new Error(message), { status: response.status, body })
  }

  const retryable = (status) => status === 0 || status === 409 || status === 423 || status >= 500
  const sleep = (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError())
      const timer = setTimeout(resolve, ms)
      if (signal)
        signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer)
            reject(abortError())
          },
          { once: true },
        )
    })

  async function tusUpload(file, options = {}) {
    const endpoint = new URL(options.endpoint || '/api/tus', location.href).href
    const chunkSize = Math.max(1, options.chunkSize || DEFAULT_CHUNK)
    const extraHeaders = options.headers || {}
    const signal = options.signal
    const retryDelays = options.retryDelays || [1000, 3000, 5000]
    const storage = options.storage || window.localStorage
    const metadata = { ...(options.metadata || {}), filename: file.name || 'image' }
    const report = (sent) => options.onProgress?.(Math.min(sent, file.size), file.size)
    // The same file with the same options resumes; anything else starts afresh.
    const key = `tus-upload:${endpoint}:${file.name}:${file.size}:${file.lastModified}:${file.type}:${JSON.stringify(options.metadata || {})}`

    const remember = (url, expires) => {
      try {
        storage.setItem(key, JSON.stringify({ url, expires }))
      } catch {}
    }
    const forget = () => {
      try {
        storage.removeItem(key)
      } catch {}
    }
    const recall = () => {
      try {
        const saved = JSON.parse(storage.getItem(key) || 'null')
        if (saved?.url && !(saved.expires && Date.parse(saved.expires) <= Date.now())) return saved.url
      } catch {}
      forget()
      return null
    }

    /** Where the server is: the offset, or null when the upload is gone (expired, terminated, not ours). */
    async function offsetOf(url) {
      for (let attempt = 0; ; attempt++) {
        const res = await request('HEAD', url, { ...TUS, ...extraHeaders }, undefined, signal)
        if (res.status === 200) return Number(res.header('Upload-Offset'))
        if (res.status === 404 || res.status === 410 || res.status === 403) return null
        if (!retryable(res.status) || attempt >= retryDelays.length) throw failure(res, 'Could not resume the upload')
        await sleep(retryDelays[attempt], signal)
      }
    }

    /** The answer of a finished upload whose last response was lost. */
    async function resultOf(url) {
      const res = await request('GET', url, extraHeaders, undefined, signal)
      forget()
      if (res.status === 200) return JSON.parse(res.text)
      throw failure(res, 'Upload failed')
    }

    let url = recall()
    let offset = url ? await offsetOf(url) : null
    if (offset === null) {
      forget()
      const res = await request(
        'POST',
        endpoint,
        { ...TUS, ...extraHeaders, 'Upload-Length': String(file.size), 'Upload-Metadata': encodeMetadata(metadata) },
        undefined,
        signal,
      )
      if (res.status !== 201) throw failure(res, 'Could not start the upload')
      url = new URL(res.header('Location'), endpoint).href
      offset = 0
      remember(url, res.header('Upload-Expires'))
    }
    if (offset >= file.size) return resultOf(url)
    report(offset)

    let failures = 0
    for (;;) {
      const end = Math.min(offset + chunkSize, file.size)
      const start = offset
      const res = await request(
        'PATCH',
        url,
        { ...TUS, ...extraHeaders, 'Upload-Offset': String(start), 'Content-Type': 'application/offset+octet-stream' },
        file.slice(start, end),
        signal,
        (loaded) => report(start + loaded),
      )
      if (res.status === 204) {
        offset = Number(res.header('Upload-Offset'))
        failures = 0
        report(offset)
        continue
      }
      if (res.status === 200) {
        // The last chunk: the answer of the upload pipeline.
        forget()
        report(file.size)
        return JSON.parse(res.text)
      }
      if (
        end === file.size &&
        res.status >= 400 &&
        res.status < 500 &&
        ![409, 423].includes(res.status) &&
        res.header('Upload-Offset') === String(file.size)
      ) {
        // The whole file arrived and was refused (quota, rate, not an image): that answer is final.
        forget()
        throw failure(res, 'Upload failed')
      }
      if (!retryable(res.status) || failures >= retryDelays.length) {
        if (res.status === 404 || res.status === 410) forget()
        throw failure(res, 'Upload failed')
      }
      await sleep(retryDelays[failures++], signal)
      const now = await offsetOf(url)
      if (now === null) {
        forget()
        throw failure(res, 'The upload expired; start it again')
      }
      if (now >= file.size) return resultOf(url)
      offset = now
    }
  }

  window.tusUpload = tusUpload
})()
