import { Elysia, t } from 'elysia'
import { type FastHandler, type FastRouteObserver, fastRoute } from '../../http/fast-route'
import type { GlobalRateLimit } from '../../http/rate-limit'
import type { Storage } from '../../storage'
import type { LiveImage } from '../images/live-cache'
import { IMAGE_ID } from '../images/model'
import type { ImageService } from '../images/service'
import type { VariantService } from '../variants/service'
import { CUSTOM } from '../variants/signing'
import { PRESETS, type Preset } from '../variants/specs'
import { createDeliveries } from './deliveries'
import { createHotFiles } from './hot-files'
import { notFound, serve } from './serve'
import { createVariantHandler } from './variants'

export type { Delivery } from './serve'

const ORIGINAL = new RegExp(`^(${IMAGE_ID})\\.([a-z]{3,4})$`)

/**
 * The route of originals, as Elysia and the request metrics name it; beside it `/cdn/<preset>/:file` for each preset
 * (medium's WebP is the upload-time thumbnail) and `/cdn/custom/:file` for signed sizes.
 */
const CDN_ROUTES = { original: '/cdn/:file' } as const

type Handler = (request: Request, file: string) => Response | Promise<Response>

/**
 * /cdn: originals (here), presets and signed sizes (variants.ts), each file's answer built once per cached image
 * (deliveries.ts) and sent with caching, conditional and range support (serve.ts).
 */
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
  const { images, storage } = deps
  const countViews = deps.countViews ?? true
  const redirect = deps.serve === 'redirect'
  const hot = createHotFiles()
  const deliveries = createDeliveries(redirect)
  const variant = createVariantHandler({ ...deps, hot, deliveries, redirect })

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
    const response = serve(request, storage, hot, deliveries.original(image))
    if (!countViews || request.method !== 'GET') return response
    const count = (r: Response) => {
      if (r.status === 200 || r.status === 302 || r.status === 304)
        images.countView(image.id, request.headers.get('user-agent'))
      return r
    }
    return response instanceof Response ? count(response) : response.then(count)
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
