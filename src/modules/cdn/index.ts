import { Elysia, t } from 'elysia'
import { originalKey, thumbnailKey, type Storage, type StorageKey } from '../../storage'
import type { ImageService } from '../images/service'

const IMMUTABLE = 'public, max-age=31536000, immutable'
// A script inside an SVG must never run: no loads, inline styles only, and a sandbox on top.
const SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
const ORIGINAL = /^([A-Za-z0-9]{8})\.([a-z]{3,4})$/
const THUMBNAIL = /^([A-Za-z0-9]{8})\.webp$/

const notFound = () => new Response(JSON.stringify({ error: 'Not found' }), { status: 404, headers: { 'content-type': 'application/json; charset=utf-8' } })

/** Parses a single `bytes=` range; multi-range requests are answered whole, as RFC 9110 allows. */
function parseRange(header: string | null, size: number): { start: number; end: number } | 'invalid' | null {
  if (!header) return null
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!match || (match[1] === '' && match[2] === '')) return null
  let start: number
  let end: number
  if (match[1] === '') {
    start = Math.max(0, size - Number(match[2]))
    end = size - 1
  } else {
    start = Number(match[1])
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1)
  }
  if (start > end || start >= size) return 'invalid'
  return { start, end }
}

/** A presigned URL lives this long; the redirect to it may be cached for a bit less, so a cached one never points at an expired URL. */
export const PRESIGN_SECONDS = 600
const REDIRECT_CACHE = `public, max-age=${PRESIGN_SECONDS / 2}`

const unavailable = () =>
  new Response(JSON.stringify({ error: 'Storage temporarily unavailable, try again shortly' }), {
    status: 503,
    headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '5', 'cache-control': 'no-store' },
  })

interface Delivery {
  storage: Storage
  key: StorageKey
  headers: Record<string, string>
  etag: string
  /** Answer with a 302 to a presigned URL instead of streaming (object stores with S3_SERVE=redirect). */
  redirect: boolean
}

/**
 * Serves stored bytes with caching, conditional and range support; the body streams from the file or the bucket,
 * never buffered in JS. Conditional requests are answered from the row's ETag without touching the store. A store
 * that fails answers 503 before any byte is sent; a missing object 404.
 */
async function serve(request: Request, d: Delivery): Promise<Response> {
  const common = { ...d.headers, etag: d.etag, 'cache-control': IMMUTABLE, 'accept-ranges': 'bytes', 'x-content-type-options': 'nosniff' }
  const ifNoneMatch = request.headers.get('if-none-match')
  if (ifNoneMatch && ifNoneMatch.split(',').some((tag) => tag.trim() === d.etag || tag.trim() === '*')) {
    return new Response(null, { status: 304, headers: common })
  }
  try {
    if (d.redirect && d.storage.presign) {
      // The bucket answers the ranges itself; the redirect must not outlive the URL it points at.
      if (!(await d.storage.exists(d.key))) return notFound()
      return new Response(null, { status: 302, headers: { location: d.storage.presign(d.key, PRESIGN_SECONDS), 'cache-control': REDIRECT_CACHE } })
    }
    const stat = await d.storage.stat(d.key)
    if (!stat) return notFound()
    const size = stat.size
    const range = parseRange(request.headers.get('range'), size)
    if (range === 'invalid') return new Response(null, { status: 416, headers: { ...common, 'content-range': `bytes */${size}` } })
    const file = d.storage.file(d.key)
    const part = range ? file.slice(range.start, range.end + 1) : file
    const length = range ? range.end - range.start + 1 : size
    const headers = range ? { ...common, 'content-range': `bytes ${range.start}-${range.end}/${size}`, 'content-length': String(length) } : { ...common, 'content-length': String(length) }
    const status = range ? 206 : 200
    if (request.method === 'HEAD') return new Response(null, { status, headers })
    const body = d.storage.openBody ? await d.storage.openBody(part, length) : part
    if (body === null) return notFound()
    return new Response(body, { status, headers })
  } catch (error) {
    console.error(JSON.stringify({ level: 'warn', msg: 'cdn: storage unavailable', key: d.key, error: String(error) }))
    return unavailable()
  }
}

export function cdnModule(deps: { images: ImageService; storage: Storage; countViews?: boolean; serve?: 'stream' | 'redirect' }) {
  const { images, storage } = deps
  const countViews = deps.countViews ?? true
  const redirect = deps.serve === 'redirect'
  const params = t.Object({ file: t.String() })

  return new Elysia({ name: 'module-cdn' })
    .get(
      '/cdn/:file',
      async ({ params, request }) => {
        const match = ORIGINAL.exec(params.file)
        const image = match ? images.find(match[1]) : undefined
        if (!image || image.ext !== match![2]) return notFound()
        const headers: Record<string, string> = { 'content-type': image.mime }
        const svg = image.mime === 'image/svg+xml'
        if (svg) headers['content-security-policy'] = SVG_CSP
        // An SVG always streams through here: only this response can carry the sandboxing CSP.
        const response = await serve(request, { storage, key: originalKey(image.id, image.ext), headers, etag: `"${image.id}-${image.size}"`, redirect: redirect && !svg })
        if (countViews && request.method === 'GET' && [200, 302, 304].includes(response.status)) images.countView(image.id)
        return response
      },
      { params, detail: { hide: true } },
    )
    .get(
      '/cdn/medium/:file',
      async ({ params, request }) => {
        const match = THUMBNAIL.exec(params.file)
        const image = match ? images.find(match[1]) : undefined
        if (!image) return notFound()
        return serve(request, { storage, key: thumbnailKey(image.id), headers: { 'content-type': 'image/webp' }, etag: `"${image.id}-thumb"`, redirect })
      },
      { params, detail: { hide: true } },
    )
}
