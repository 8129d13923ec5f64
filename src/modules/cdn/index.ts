import type { Server } from 'bun'
import { Elysia, t } from 'elysia'
import { NOT_FOUND, StorageUnavailable } from '../../errors'
import { ipKey, resolveClientIp } from '../../http/client-ip'
import { httpErrorOf, jsonResponse } from '../../http/errors'
import { type FastHandler, type FastRouteObserver, fastRoute } from '../../http/fast-route'
import type { GlobalRateLimit } from '../../http/rate-limit'
import { log } from '../../log'
import type { VariantSpec } from '../../media'
import { originalKey, type Storage, type StorageKey, thumbnailKey } from '../../storage'
import type { LiveImage } from '../images/live-cache'
import { IMAGE_ID } from '../images/model'
import type { ImageService } from '../images/service'
import type { VariantService } from '../variants/service'
import { CUSTOM } from '../variants/signing'
import { FORMAT_MIME, PRESETS, type Preset, presetSpec, VARIANT_FORMATS } from '../variants/specs'
import { createHotFiles, type HotFiles } from './hot-files'

const IMMUTABLE = 'public, max-age=31536000, immutable'
// A script inside an SVG must never run: no loads, inline styles only, and a sandbox on top.
const SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
/**
 * Every /cdn answer but 404/503 (the redirect too): a direct link may be embedded anywhere, on pages with COEP
 * `require-corp` and, with `crossorigin`, in a canvas; images are public by link, private ones too (the contract).
 */
const EMBED = { 'cross-origin-resource-policy': 'cross-origin', 'access-control-allow-origin': '*' } as const
const ORIGINAL = new RegExp(`^(${IMAGE_ID})\\.([a-z]{3,4})$`)
const VARIANT = new RegExp(`^(${IMAGE_ID})\\.(${VARIANT_FORMATS.join('|')})$`)

/**
 * The route of originals, as Elysia and the request metrics name it; beside it `/cdn/<preset>/:file` for each preset
 * (medium's WebP is the upload-time thumbnail) and `/cdn/custom/:file` for signed sizes.
 */
const CDN_ROUTES = { original: '/cdn/:file' } as const

const notFound = () => jsonResponse({ error: NOT_FOUND }, 404)

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
function delivery(
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
function notModified(request: Request, d: Delivery): Response | undefined {
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
function serve(request: Request, storage: Storage, hot: HotFiles, d: Delivery): Response | Promise<Response> {
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

type Handler = (request: Request, file: string) => Response | Promise<Response>

/** A fresh delivery of each file of an image, as its cache entry keeps them. */
interface Deliveries {
  original?: Delivery
  thumbnail?: Delivery
  /** By storage key: presets and signed sizes. */
  variants?: Map<StorageKey, Delivery>
  /** Signed URLs (`<file>?<query>`) already verified whose variant is stored: no HMAC per cached request. */
  signed?: Map<string, VariantSpec>
}

export function cdnModule(deps: {
  images: ImageService
  variants: VariantService
  /** Presets and signed sizes made (not served from storage) per client IP: a 429 past it. */
  variantsMade: Pick<GlobalRateLimit, 'admit'>
  /** Whether the client IP comes from X-Forwarded-For (TRUST_PROXY): the turn a variant's job takes is its client's. */
  trustProxy: boolean
  storage: Storage
  /** Where the fast path (see `routes`) records its requests. */
  observe: FastRouteObserver
  countViews?: boolean
  serve?: 'stream' | 'redirect'
}) {
  const { images, variants, storage } = deps
  const countViews = deps.countViews ?? true
  const redirect = deps.serve === 'redirect'
  const hot = createHotFiles()
  // The answers of each cached image, kept as long as its entry: a changed or evicted image is a new entry object.
  const deliveries = new WeakMap<LiveImage, Deliveries>()
  const deliveriesOf = (image: LiveImage) => {
    const found = deliveries.get(image)
    if (found) return found
    const made: Deliveries = {}
    deliveries.set(image, made)
    return made
  }

  function originalDelivery(image: LiveImage): Delivery {
    const known = deliveriesOf(image)
    if (known.original) return known.original
    const headers: Record<string, string> = { 'content-type': image.mime }
    const svg = image.mime === 'image/svg+xml'
    if (svg) headers['content-security-policy'] = SVG_CSP
    // An SVG always streams through here: only this response can carry the sandboxing CSP.
    known.original = delivery(
      originalKey(image.id, image.ext),
      headers,
      `"${image.id}-${image.size}"`,
      redirect && !svg,
      image.createdAt,
    )
    return known.original
  }

  function thumbnailDelivery(image: LiveImage): Delivery {
    const known = deliveriesOf(image)
    known.thumbnail ??= delivery(
      thumbnailKey(image.id),
      { 'content-type': 'image/webp' },
      `"${image.id}-thumb"`,
      redirect,
      image.createdAt,
    )
    return known.thumbnail
  }

  // Ids are validated (by the patterns, and again by the lookup) before anything is looked up. A cached image is
  // answered without any await; only a miss waits for the database.
  const original: Handler = (request, file) => {
    const match = ORIGINAL.exec(file)
    if (!match) return notFound()
    const found = images.liveCache.get(match[1])
    return found instanceof Promise
      ? found.then((image) => serveOriginal(request, image, match[2]))
      : serveOriginal(request, found, match[2])
  }

  function serveOriginal(request: Request, image: LiveImage | undefined, ext: string) {
    if (!image || image.ext !== ext) return notFound()
    const response = serve(request, storage, hot, originalDelivery(image))
    if (!countViews || request.method !== 'GET') return response
    const count = (r: Response) => {
      if (r.status === 200 || r.status === 302 || r.status === 304)
        images.countView(image.id, request.headers.get('user-agent'))
      return r
    }
    return response instanceof Response ? count(response) : response.then(count)
  }

  /**
   * A preset or signed size: served from storage once made; the first request has it made (once, however many ask:
   * variants.ensure, which answers 422 at once for a size that will not be made), and a size made counts against the
   * client's cap. A 304 needs no variant: its ETag says which it is.
   */
  const variant = (request: Request, preset: Preset | typeof CUSTOM, file: string, server: Server<unknown> | null) => {
    const match = VARIANT.exec(file)
    if (!match) return notFound()
    const format = match[2] as VariantSpec['format']
    const found = images.liveCache.get(match[1])
    return found instanceof Promise
      ? found.then((image) => serveVariant(request, preset, file, server, image, format))
      : serveVariant(request, preset, file, server, found, format)
  }

  function serveVariant(
    request: Request,
    preset: Preset | typeof CUSTOM,
    file: string,
    server: Server<unknown> | null,
    image: LiveImage | undefined,
    format: VariantSpec['format'],
  ): Response | Promise<Response> {
    if (!image) return notFound()
    const all = deliveriesOf(image)
    let spec: VariantSpec
    let signedUrl: string | undefined
    if (preset === CUSTOM) {
      const at = request.url.indexOf('?')
      signedUrl = at < 0 ? file : `${file}?${request.url.slice(at + 1)}`
      spec = all.signed?.get(signedUrl) ?? variants.verify(file, format, at < 0 ? '' : request.url.slice(at + 1))
    } else {
      // The medium WebP is the thumbnail made at upload, under its own link.
      if (preset === 'medium' && format === 'webp') return serve(request, storage, hot, thumbnailDelivery(image))
      spec = presetSpec(preset, format)
    }
    const key = variants.keyOf(image.id, spec)
    // A key known to be stored is answered at once; otherwise the database is asked first.
    const stored = variants.stored(key)
    const answer = (stored: boolean) =>
      serveVariantFile(request, server, image, format, all, spec, signedUrl, key, stored)
    return typeof stored === 'boolean' ? answer(stored) : stored.then(answer)
  }

  function serveVariantFile(
    request: Request,
    server: Server<unknown> | null,
    image: LiveImage,
    format: VariantSpec['format'],
    all: Deliveries,
    spec: VariantSpec,
    signedUrl: string | undefined,
    key: StorageKey,
    stored: boolean,
  ): Response | Promise<Response> {
    all.variants ??= new Map()
    const known = all.variants
    // Remembered once stored, so as many as the image's stored variants (made under the per-IP cap), never a guess.
    if (stored && signedUrl) {
      all.signed ??= new Map()
      all.signed.set(signedUrl, spec)
    }
    const kept = known.get(key)
    if (stored && kept) return serve(request, storage, hot, kept)
    // Not stored (or not served yet): a new delivery, so nothing learned of an evicted file is used again.
    const etag = `"${key.slice(key.indexOf('/') + 1)}"`
    const d = delivery(key, { 'content-type': FORMAT_MIME[format] }, etag, redirect, image.createdAt)
    known.set(key, d)
    if (stored) return serve(request, storage, hot, d)
    const cached = notModified(request, d)
    if (cached) return cached
    // The job takes its turn in the media pool as this client's work (src/workers/pool.ts).
    const owner = `ip:${ipKey(resolveClientIp(request, server, deps.trustProxy))}`
    const starting = () => deps.variantsMade.admit(request, server)
    return variants.ensure(image, spec, key, { owner, starting }).then(() => serve(request, storage, hot, d))
  }

  // The same handlers as Bun routes, ahead of the Elysia app and its global hooks (src/http/fast-route.ts): /cdn is
  // not rate limited, has no auth and handles its own errors.
  // A failure is never cached (a size made on first request meets the store's and the disk's faults).
  const failure = { 'cache-control': 'no-store' }
  const fast = fastRoute(
    deps.observe,
    CDN_ROUTES.original,
    (request) => original(request, request.params.file),
    failure,
  )
  const params = t.Object({ file: t.String() })
  const routes: Record<string, { GET: FastHandler; HEAD: FastHandler }> = {
    [CDN_ROUTES.original]: { GET: fast, HEAD: fast },
  }
  const plugin = new Elysia({ name: 'module-cdn' }).get(
    CDN_ROUTES.original,
    ({ params, request }) => original(request, params.file),
    { params, detail: { hide: true } },
  )
  for (const name of [...(Object.keys(PRESETS) as Preset[]), CUSTOM] as const) {
    const route = `/cdn/${name}/:file`
    const handler = fastRoute(
      deps.observe,
      route,
      (request, server) => variant(request, name, request.params.file, server),
      failure,
    )
    routes[route] = { GET: handler, HEAD: handler }
    plugin.get(route, ({ params, request, server }) => variant(request, name, params.file, server), {
      params,
      detail: { hide: true },
    })
  }

  return {
    /** For Bun.serve's `routes` (Elysia's `serve.routes`): the fast path of a listening server. */
    routes,
    /** The same routes inside Elysia: for `app.handle`, and for whatever reaches the app without the Bun routes. */
    plugin,
  }
}
