import { NOT_FOUND, StorageUnavailable } from '../../errors'
import { httpErrorOf, jsonResponse } from '../../http/errors'
import { log } from '../../log'
import type { Storage, StorageKey } from '../../storage'
import type { HotFiles } from './hot-files'

/** How /cdn answers one stored file: its headers, conditional requests, ranges, the store's faults. */

const IMMUTABLE = 'public, max-age=31536000, immutable'
// A script inside an SVG must never run: no loads, inline styles only, and a sandbox on top.
export const SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
/**
 * Every /cdn answer but 404/503 (the redirect too): a direct link may be embedded anywhere, on pages with COEP
 * `require-corp` and, with `crossorigin`, in a canvas; images are public by link, private ones too (the contract).
 */
const EMBED = { 'cross-origin-resource-policy': 'cross-origin', 'access-control-allow-origin': '*' } as const

export const notFound = () => jsonResponse({ error: NOT_FOUND }, 404)

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
const PRESIGN_SECONDS = 600
const REDIRECT_CACHE = `public, max-age=${PRESIGN_SECONDS / 2}`

/** The error model's answer for a store that is down, never cached. */
const unavailable = () => {
  const { status, message, headers } = httpErrorOf(new StorageUnavailable())!
  return jsonResponse({ error: message }, status, { ...headers, 'cache-control': 'no-store' })
}

/**
 * Everything one file's answer needs that does not depend on the request, built once per cached image and file
 * (images/live-cache.ts): the store key, the ETag and the header objects. `size`, `file` and `full` are only set on
 * local disk, where a stored file never changes under its key (written once by rename, removed only with its row), so
 * its size is read once instead of a stat per request; an object store is asked every time (its HEAD is also what
 * tells a HEAD request that the store is down: 503).
 */
export interface Delivery {
  key: StorageKey
  etag: string
  /** Whole seconds: what `Last-Modified` says and `If-Modified-Since` is compared with. */
  modified: number
  /** Content type, ETag, Last-Modified, caching, ranges, nosniff, the embed headers (and the SVG CSP): every answer but 404/503 carries them. */
  common: Record<string, string>
  /** `common` as a ready Headers object (the 304 answer): Bun copies it into a Response ~3x faster than a plain object. */
  commonHeaders: Headers
  /** Answer with a 302 to a presigned URL instead of streaming (object stores with S3_SERVE=redirect). */
  redirect: boolean
  size?: number
  file?: Blob
  /** `common` plus Content-Length of the whole file: the 200 and HEAD answer. */
  full?: Headers
}

/**
 * `modified` is the image's upload time, for its variants too: they are made from the original, which never changes
 * under its id (their ETag says the same).
 */
export function delivery(
  key: StorageKey,
  headers: Record<string, string>,
  etag: string,
  redirect: boolean,
  modified: number,
): Delivery {
  const seconds = Math.floor(modified / 1000) * 1000
  const common = {
    ...headers,
    ...EMBED,
    etag,
    'last-modified': new Date(seconds).toUTCString(),
    'cache-control': IMMUTABLE,
    'accept-ranges': 'bytes',
    'x-content-type-options': 'nosniff',
  }
  return { key, etag, redirect, modified: seconds, common, commonHeaders: new Headers(common) }
}

/** RFC 9110 13.2.2: If-None-Match decides when present; If-Modified-Since only without it (an unparsable date is ignored). */
export function notModified(request: Request, d: Delivery): Response | undefined {
  const ifNoneMatch = request.headers.get('if-none-match')
  const fresh =
    ifNoneMatch !== null
      ? ifNoneMatch.split(',').some((tag) => tag.trim() === d.etag || tag.trim() === '*')
      : Date.parse(request.headers.get('if-modified-since') ?? '') >= d.modified
  if (fresh) return new Response(null, { status: 304, headers: d.commonHeaders })
}

/** The answer for a known size: whole (200), a range (206) or an unsatisfiable range (416); HEAD without the body. */
function answer(request: Request, d: Delivery, size: number, file: Blob, full: Headers): Response {
  const range = parseRange(request.headers.get('range'), size)
  if (range === null) return new Response(request.method === 'HEAD' ? null : file, { status: 200, headers: full })
  if (range === 'invalid')
    return new Response(null, { status: 416, headers: { ...d.common, 'content-range': `bytes */${size}` } })
  const length = range.end - range.start + 1
  const headers = {
    ...d.common,
    'content-range': `bytes ${range.start}-${range.end}/${size}`,
    'content-length': String(length),
  }
  return new Response(request.method === 'HEAD' ? null : file.slice(range.start, range.end + 1), {
    status: 206,
    headers,
  })
}

/**
 * Serves stored bytes with caching, conditional and range support; the body streams from the file or the bucket (or
 * on local disk, for small files served before, from memory: hot-files.ts). Conditional requests are answered from the
 * row's ETag without touching the store. A store that fails answers 503 before any byte is sent; a missing object 404.
 * On local disk, once the file's size is known (the second request on), the answer is built without any await, stat
 * or lookup.
 */
export function serve(request: Request, storage: Storage, hot: HotFiles, d: Delivery): Response | Promise<Response> {
  const cached = notModified(request, d)
  if (cached) return cached
  if (d.file) {
    const inMemory = hot.get(d)
    if (!inMemory) hot.load(d, d.file, d.size!)
    return answer(request, d, d.size!, inMemory ?? d.file, d.full!)
  }
  return serveFromStore(request, storage, d)
}

async function serveFromStore(request: Request, storage: Storage, d: Delivery): Promise<Response> {
  try {
    if (d.redirect && storage.presign) {
      // The bucket answers the ranges itself; the redirect must not outlive the URL it points at.
      if (!(await storage.exists(d.key))) return notFound()
      return new Response(null, {
        status: 302,
        headers: { ...EMBED, location: storage.presign(d.key, PRESIGN_SECONDS), 'cache-control': REDIRECT_CACHE },
      })
    }
    const stat = await storage.stat(d.key)
    if (!stat) return notFound()
    const size = stat.size
    const file = storage.file(d.key)
    if (!storage.openBody) {
      // Local disk: the file is final, keep what was learned. (Set on this delivery object only: if the image went
      // meanwhile, its cache entry, and with it this delivery, is gone.)
      d.size = size
      d.full = new Headers({ ...d.common, 'content-length': String(size) })
      d.file = file
      return answer(request, d, size, file, d.full)
    }
    const range = parseRange(request.headers.get('range'), size)
    if (range === 'invalid')
      return new Response(null, { status: 416, headers: { ...d.common, 'content-range': `bytes */${size}` } })
    const part = range ? file.slice(range.start, range.end + 1) : file
    const length = range ? range.end - range.start + 1 : size
    const headers = range
      ? { ...d.common, 'content-range': `bytes ${range.start}-${range.end}/${size}`, 'content-length': String(length) }
      : { ...d.common, 'content-length': String(length) }
    const status = range ? 206 : 200
    if (request.method === 'HEAD') return new Response(null, { status, headers })
    const body = await storage.openBody(part, length)
    if (body === null) return notFound()
    return new Response(body, { status, headers })
  } catch (error) {
    log.warn('cdn: storage unavailable', { key: d.key, error: String(error) })
    return unavailable()
  }
}
