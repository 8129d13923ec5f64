import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { jsonResponse } from '../../http/errors'
import { type FastRouteObserver, fastRoute } from '../../http/fast-route'
import type { GlobalRateLimit } from '../../http/rate-limit'
import { apiImageRoutes, DETAILS_ROUTE, dashboardImageRoutes, detailsAnswer } from './image-routes'
import type { ImageService } from './service'
import type { UploadPipeline } from './upload'
import { uploadRoutes } from './upload-routes'

/**
 * GET /api/v1/image/:id for Bun's router, ahead of the app (src/http/fast-route.ts): the busiest API read, which needs
 * none of the app's hooks but the global rate limit. The app's own route documents it and answers `app.handle`.
 */
export function imageDetailsRoutes(deps: {
  images: ImageService
  observe: FastRouteObserver
  admit: GlobalRateLimit['admit']
}) {
  const details = fastRoute(deps.observe, DETAILS_ROUTE, (request, server) => {
    deps.admit(request, server)
    return detailsAnswer(deps.images, request.params.id, jsonResponse)
  })
  return { [DETAILS_ROUTE]: { GET: details, HEAD: details } }
}

/** The images' routes: uploads (upload-routes.ts), the /api/v1 API and the dashboard's (image-routes.ts). */
export function imagesModule(deps: {
  images: ImageService
  pipeline: UploadPipeline
  guard: ReturnType<typeof authGuard>
}) {
  return new Elysia({ name: 'module-images' })
    .use(uploadRoutes(deps.pipeline, deps.guard))
    .use(apiImageRoutes(deps.images, deps.guard))
    .use(dashboardImageRoutes(deps.images, deps.guard))
}
