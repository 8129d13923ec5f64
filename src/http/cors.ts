import { Elysia } from 'elysia'
import type { Config } from '../config'
import type { FastHandler } from './fast-route'
import { patternOf } from './methods'

/**
 * Cross-origin reads of the public JSON (the gallery, search, profiles, image metadata, oEmbed), so a page on another
 * site can show them. Only GET and HEAD of public data, never credentials: `Access-Control-Allow-Origin: *` lets a
 * page read what an anonymous request gets, and a browser sends no cookie or key with it (`*` forbids credentials,
 * and the preflight allows no `Authorization` or `X-API-Key`). With a list of origins, the one a request names is
 * echoed and every answer says `Vary: Origin`, so no cache hands one site's answer to another.
 */

const ALLOW_METHODS = 'GET, HEAD'
/** What a reading page may send beyond the CORS-safelisted headers: conditional requests, never credentials. */
const ALLOW_HEADERS = 'If-None-Match, If-Modified-Since'
/** What a reading page may see beyond the safelisted answer headers: the global limiter's (a 429's wait). */
const EXPOSE_HEADERS = 'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset'
/** How long a browser keeps a preflight's answer (Chromium caps it at 2 hours). */
const MAX_AGE_SECONDS = '7200'

/** A request's path without its query, cheaply: this runs on every request. */
function pathOf(url: string) {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const query = url.indexOf('?', start)
  return query < 0 ? url.slice(start) : url.slice(start, query)
}

export type CorsPolicy = ReturnType<typeof corsPolicy>

/** The CORS headers of the public reads at `paths` (route patterns, `:param` a segment) under CORS_ORIGINS. */
export function corsPolicy(origins: Config['cors']['origins'], paths: string[]) {
  const patterns = paths.map(patternOf)
  /** The allowing headers for this request's origin; with a list, `Vary: Origin` whatever it names. */
  function allowing(request: Request): Record<string, string> {
    if (origins === '*') return { 'access-control-allow-origin': '*' }
    const origin = request.headers.get('origin')
    if (!origin || !origins?.includes(origin.toLowerCase())) return { vary: 'Origin' }
    return { 'access-control-allow-origin': origin, vary: 'Origin' }
  }
  return {
    enabled: origins !== null,
    paths,
    /** Whether this request is a read CORS covers. */
    covers: (request: Request) =>
      origins !== null &&
      (request.method === 'GET' || request.method === 'HEAD') &&
      patterns.some((p) => p.test(pathOf(request.url))),
    /** The headers of a read's answer (success or error alike). */
    headers: (request: Request) => ({ ...allowing(request), 'access-control-expose-headers': EXPOSE_HEADERS }),
    /** The preflight's answer: 204, the methods and headers a reading page may use. */
    preflight: (request: Request) =>
      new Response(null, {
        status: 204,
        headers: {
          ...allowing(request),
          'access-control-allow-methods': ALLOW_METHODS,
          'access-control-allow-headers': ALLOW_HEADERS,
          'access-control-max-age': MAX_AGE_SECONDS,
        },
      }),
  }
}

/**
 * The app's side: a read's answer gets the headers (set before anything can refuse it, so a 404 or a limiter's 429
 * carries them too), and each path answers its preflight.
 */
export function cors(policy: CorsPolicy) {
  const plugin = new Elysia({ name: 'cors' })
  if (!policy.enabled) return plugin
  plugin.onRequest(({ request, set }) => {
    if (policy.covers(request)) Object.assign(set.headers, policy.headers(request))
  })
  for (const path of policy.paths) {
    plugin.options(path, ({ request }) => policy.preflight(request), { detail: { hide: true } })
  }
  return plugin
}

/** The same headers on the routes Bun answers ahead of the app (src/http/fast-route.ts). */
export function corsFastRoutes<R extends Record<string, Record<string, FastHandler>>>(
  policy: CorsPolicy,
  routes: R,
): R {
  if (!policy.enabled) return routes
  const add = (request: Request, response: Response) => {
    for (const [name, value] of Object.entries(policy.headers(request))) response.headers.set(name, value)
    return response
  }
  const wrap =
    (handler: FastHandler): FastHandler =>
    (request, server) => {
      const response = handler(request, server)
      return response instanceof Response ? add(request, response) : response.then((r) => add(request, r))
    }
  return Object.fromEntries(
    Object.entries(routes).map(([path, methods]) => [
      path,
      Object.fromEntries(Object.entries(methods).map(([method, handler]) => [method, wrap(handler)])),
    ]),
  ) as R
}
