import { Elysia, t } from 'elysia'
import { originalKey, thumbnailKey, type Storage } from '../../storage'
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

/** Serves stored bytes with caching, conditional and range support; the body streams from the file, never buffered in JS. */
async function serve(request: Request, file: Blob, headers: Record<string, string>, etag: string): Promise<Response> {
  const common = { ...headers, etag, 'cache-control': IMMUTABLE, 'accept-ranges': 'bytes', 'x-content-type-options': 'nosniff' }
  const ifNoneMatch = request.headers.get('if-none-match')
  if (ifNoneMatch && ifNoneMatch.split(',').some((tag) => tag.trim() === etag || tag.trim() === '*')) {
    return new Response(null, { status: 304, headers: common })
  }
  const size = file.size
  const range = parseRange(request.headers.get('range'), size)
  if (range === 'invalid') return new Response(null, { status: 416, headers: { ...common, 'content-range': `bytes */${size}` } })
  if (range) {
    return new Response(file.slice(range.start, range.end + 1), {
      status: 206,
      headers: { ...common, 'content-range': `bytes ${range.start}-${range.end}/${size}`, 'content-length': String(range.end - range.start + 1) },
    })
  }
  return new Response(file, { headers: { ...common, 'content-length': String(size) } })
}

export function cdnModule(deps: { images: ImageService; storage: Storage; countViews?: boolean }) {
  const { images, storage } = deps
  const countViews = deps.countViews ?? true
  const params = t.Object({ file: t.String() })

  return new Elysia({ name: 'module-cdn' })
    .get(
      '/cdn/:file',
      async ({ params, request }) => {
        const match = ORIGINAL.exec(params.file)
        const image = match ? images.find(match[1]) : undefined
        if (!image || image.ext !== match![2]) return notFound()
        const file = storage.file(originalKey(image.id, image.ext))
        if (!(await file.exists())) return notFound()
        const headers: Record<string, string> = { 'content-type': image.mime }
        if (image.mime === 'image/svg+xml') headers['content-security-policy'] = SVG_CSP
        const response = await serve(request, file, headers, `"${image.id}-${image.size}"`)
        if (countViews && request.method === 'GET' && (response.status === 200 || response.status === 304)) images.countView(image.id)
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
        const file = storage.file(thumbnailKey(image.id))
        if (!(await file.exists())) return notFound()
        return serve(request, file, { 'content-type': 'image/webp' }, `"${image.id}-thumb"`)
      },
      { params, detail: { hide: true } },
    )
}
