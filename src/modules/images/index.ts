import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { UPLOAD_PATHS } from '../../http/body-limit'
import { errors, jsonResponse } from '../../http/errors'
import { type FastRouteObserver, fastRoute } from '../../http/fast-route'
import { receiveMultipart, type UploadSource } from '../../http/multipart'
import { parsePage } from '../../http/pagination'
import { type GlobalRateLimit, rateLimitHeaders } from '../../http/rate-limit'
import { Success } from '../../http/schemas'
import { MAX_REDIRECTS } from '../../net/fetch-url'
import {
  AccountUsage,
  EXPIRES_DESCRIPTION,
  ImageDetailsResponse,
  ImageIdParams,
  ImageListQuery,
  ImageListResponse,
  ImagePatch,
  ImagePatchResponse,
  OwnImageListQuery,
  UploadResponse,
} from './model'
import type { ImageListOrder } from './repository'
import type { ImageService } from './service'
import type { UploadCaller, UploadEndpoint, UploadPipeline } from './upload'

/** The multipart body as OpenAPI sees it; the body itself is streamed by the pipeline, not parsed by the framework. */
function multipartBody(extra: Record<string, object> = {}, required = ['file']) {
  return {
    required: true,
    content: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          required,
          properties: {
            file: {
              type: 'array',
              items: { type: 'string', format: 'binary' },
              description: 'One or more image files (repeat the field)',
            },
            visibility: { type: 'string', enum: ['public', 'private'], default: 'public' },
            private: { type: 'string', description: 'true, 1, yes or on: shorthand for visibility=private' },
            nsfw: { type: 'string', description: '"true" flags the upload as NSFW' },
            album: { type: 'string', description: 'Album id, or a folder name created on first use' },
            folder: { type: 'string', description: 'Alias of album' },
            expires: { type: 'string', description: EXPIRES_DESCRIPTION, examples: ['PT10M', 'P7D', 'P1DT2H', '3600'] },
            ...extra,
          },
        },
      },
    },
  }
}

/** The list order a query asks for: by date, newest first, unless it names another. */
const listOrder = (query: { sort?: ImageListOrder['by']; order?: ImageListOrder['direction'] }): ImageListOrder => ({
  by: query.sort ?? 'date',
  direction: query.order ?? 'desc',
})

/** At once from a cached entry (no await on the hot path), a promise when the database is asked. */
function detailsAnswer<R>(images: ImageService, id: string, answer: (body: DetailsBody) => R): R | Promise<R> {
  const data = images.details(id)
  return data instanceof Promise
    ? data.then((data) => answer({ success: true as const, data }))
    : answer({ success: true as const, data })
}
type DetailsBody = { success: true; data: Awaited<ReturnType<ImageService['details']>> }

const DETAILS_ROUTE = '/api/v1/image/:id'

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

export function imagesModule(deps: {
  images: ImageService
  pipeline: UploadPipeline
  guard: ReturnType<typeof authGuard>
}) {
  const { images, pipeline } = deps

  /** Streams the request's files into the pipeline and answers 201: one file a flat object, several `{ success, images }`. */
  async function upload(
    request: Request,
    endpoint: UploadEndpoint,
    caller: UploadCaller,
    set: { status?: number | string; headers: Record<string, unknown> },
  ) {
    const receive: UploadSource = (limits) => receiveMultipart(request, limits)
    // Only the API takes `url` fields: the web page uploads files.
    const result = await pipeline.upload(
      endpoint === 'api' ? pipeline.withUrls(receive) : receive,
      pipeline.optionsFor(endpoint, caller),
    )
    set.status = 201
    Object.assign(set.headers, rateLimitHeaders(result.window))
    return result.body
  }
  const uploadRoute = { parse: 'none' as const, response: { 201: UploadResponse, ...errors(400, 401, 403, 413, 429) } }

  return (
    new Elysia({ name: 'module-images' })
      .use(deps.guard)
      .post(
        UPLOAD_PATHS.api,
        ({ request, user, clientIp, set }) => upload(request, 'api', { user, ip: clientIp }, set),
        {
          ...uploadRoute,
          apiKey: true,
          detail: {
            tags: ['Images'],
            summary: 'Upload one or more images with an API key',
            requestBody: multipartBody(
              {
                url: {
                  type: 'array',
                  items: { type: 'string', format: 'uri' },
                  description:
                    'One or more http(s) URLs of images to fetch and store (repeat the field), counted with the files against the per-upload count, each under the per-file size limit, stored after the files.' +
                    ` Private, loopback and link-local addresses are refused (unless URL_UPLOAD_ALLOW_PRIVATE), at most ${MAX_REDIRECTS} redirects, URL_UPLOAD_TIMEOUT_MS per URL; a URL that fails is a 400 that says why.`,
                },
              },
              [],
            ) as never,
          },
        },
      )
      .post(
        UPLOAD_PATHS.web,
        ({ request, user, clientIp, set }) => upload(request, 'web', { user, ip: clientIp }, set),
        {
          ...uploadRoute,
          optionalSession: true,
          detail: {
            tags: ['Images'],
            summary: 'Web upload: anonymous or with a JWT; every image is scanned for mature content',
            requestBody: multipartBody({
              expires: {
                type: 'string',
                description:
                  EXPIRES_DESCRIPTION +
                  ' Anonymous uploads that give none expire after ANON_DEFAULT_EXPIRY seconds when it is set (never by default), and may not ask for longer.',
                examples: ['PT10M', 'P7D', 'P1DT2H', '3600'],
              },
            }) as never,
          },
        },
      )
      .get(DETAILS_ROUTE, ({ params }) => detailsAnswer(images, params.id, (body) => body), {
        params: ImageIdParams,
        response: { 200: ImageDetailsResponse, ...errors(404) },
        detail: { tags: ['Images'], summary: 'Image metadata (private images too, for whoever holds the id)' },
      })
      .patch('/api/v1/image/:id', ({ params, body, user }) => images.patch(user, params.id, body), {
        apiKey: true,
        params: ImageIdParams,
        body: ImagePatch,
        response: { 200: ImagePatchResponse, ...errors(400, 401, 403, 404) },
        detail: {
          tags: ['Images'],
          summary: 'Change visibility, the NSFW flag, the expiry and/or the name (filename) of your image',
        },
      })
      .delete(
        '/api/v1/image/:id',
        async ({ params, headers, user }) => {
          await images.deleteBy({ user, deleteToken: headers['x-delete-token'] ?? null }, params.id)
          return { success: true as const }
        },
        {
          apiKeyOrDeleteToken: true,
          params: ImageIdParams,
          response: { 200: Success, ...errors(401, 403, 404) },
          detail: {
            tags: ['Images'],
            summary: 'Delete your image (X-API-Key), or an anonymous upload with its X-Delete-Token',
          },
        },
      )
      .get(
        '/api/v1/images',
        ({ query, user }) =>
          images.list(user, parsePage(query, { limit: 20, maxLimit: 100 }), { name: query.q }, listOrder(query)),
        {
          apiKey: true,
          query: ImageListQuery,
          response: { 200: ImageListResponse, ...errors(400, 401, 403) },
          detail: {
            tags: ['Images'],
            summary:
              'Your images, newest first (limit default 20, at most 100); q narrows by filename, sort and order reorder',
          },
        },
      )
      .get('/api/v1/me', ({ user }) => images.usage(user), {
        apiKey: true,
        response: { 200: AccountUsage, ...errors(401, 403) },
        detail: { tags: ['Images'], summary: 'Account usage: storage, limits and the hourly upload window' },
      })
      // The same operations for the website's dashboard, authenticated by the session (JWT) instead of an API key.
      // /api/v1 stays key-only, as the contract says; these reuse the same service functions and response shapes.
      .get(
        '/api/images',
        ({ query, user }) =>
          images.list(
            user,
            parsePage(query, { limit: 20, maxLimit: 100 }),
            {
              visibility: query.visibility,
              nsfw: query.nsfw === undefined ? undefined : query.nsfw === 'true',
              name: query.q,
            },
            listOrder(query),
          ),
        {
          session: true,
          query: OwnImageListQuery,
          response: { 200: ImageListResponse, ...errors(400, 401, 403) },
          detail: {
            tags: ['Images'],
            summary:
              'Your images, for the dashboard (JWT): GET /api/v1/images (q, sort, order) plus visibility and nsfw filters',
          },
        },
      )
      .patch('/api/images/:id', ({ params, body, user }) => images.patch(user, params.id, body), {
        session: true,
        params: ImageIdParams,
        body: ImagePatch,
        response: { 200: ImagePatchResponse, ...errors(400, 401, 403, 404) },
        detail: {
          tags: ['Images'],
          summary: 'Change visibility, NSFW flag, expiry and/or name of your image (JWT; as PATCH /api/v1/image/:id)',
        },
      })
      .delete(
        '/api/images/:id',
        async ({ params, user }) => {
          await images.deleteBy({ user, deleteToken: null }, params.id)
          return { success: true as const }
        },
        {
          session: true,
          params: ImageIdParams,
          response: { 200: Success, ...errors(401, 403, 404) },
          detail: { tags: ['Images'], summary: 'Delete your image (JWT; as DELETE /api/v1/image/:id)' },
        },
      )
      .get('/api/account/usage', ({ user }) => images.usage(user), {
        session: true,
        response: { 200: AccountUsage, ...errors(401, 403) },
        detail: { tags: ['Images'], summary: 'Account usage for the dashboard (JWT): the object of GET /api/v1/me' },
      })
  )
}
