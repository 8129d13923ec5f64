import type { Server } from 'bun'
import { httpErrorResponse, INTERNAL_ERROR, jsonResponse, knownAnswer, logUnhandled } from './errors'
import { type Metrics, recordRequest, sentBytes } from './observability'

/** A request as Bun's router hands it over: with the route's path parameters. */
export type RoutedRequest = Request & { params: Record<string, string> }

/** What a fast route records every request in (as the app's request log does). */
export interface FastRouteObserver {
  metrics: Metrics
  /** LOG_REQUESTS: write the request log line. */
  log: boolean
}

export type FastHandler = (request: RoutedRequest, server: Server<unknown>) => Response | Promise<Response>

/**
 * A handler for Bun's router (Elysia's `serve.routes`), answered ahead of the Elysia app and its global hooks: for
 * the hot read routes (/cdn, image metadata), where that pipeline cost more than the route's own work (bench/README.md).
 * It keeps what those hooks give every request: the request metrics and log line (recordRequest, as requestLog writes
 * them) and the error model's answers (an HttpError or a domain error as its `{ error }`, a disk or database fault as its 507/503,
 * anything else a 500 that names nothing).
 * Whatever else the route needs (the rate limiter, a lookup) it calls itself. The same route stays in the app, where
 * it is documented and reached by `app.handle`.
 */
export function fastRoute(
  observe: FastRouteObserver,
  route: string,
  handler: FastHandler,
  /** Added to every error answer of the route (/cdn: `cache-control: no-store`, so no cache keeps a failure). */
  errorHeaders: Record<string, string> = {},
) {
  const done = (request: Request, response: Response, start: number) => {
    recordRequest(observe.metrics, observe.log, {
      method: request.method,
      route,
      status: response.status,
      durationMs: performance.now() - start,
      bytes: () => sentBytes(request, response),
    })
    return response
  }
  const failed = (request: Request, error: unknown, start: number) => {
    const known = knownAnswer(error)
    const response = known ? httpErrorResponse(known) : jsonResponse(INTERNAL_ERROR, 500)
    if (!known) logUnhandled(error)
    for (const [name, value] of Object.entries(errorHeaders)) response.headers.set(name, value)
    return done(request, response, start)
  }
  return (request: RoutedRequest, server: Server<unknown>) => {
    const start = performance.now()
    try {
      const response = handler(request, server)
      if (response instanceof Response) return done(request, response, start)
      return response.then(
        (r) => done(request, r, start),
        (error) => failed(request, error, start),
      )
    } catch (error) {
      return failed(request, error, start)
    }
  }
}
