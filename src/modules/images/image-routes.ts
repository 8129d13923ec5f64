import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { parsePage } from '../../http/pagination'
import { Success } from '../../http/schemas'
import {
  AccountUsage,
  ImageDetailsResponse,
  ImageIdParams,
  ImageListQuery,
  ImageListResponse,
  ImagePatch,
  ImagePatchResponse,
  OwnImageListQuery,
} from './model'
import type { ImageListOrder } from './repository'
import type { ImageService } from './service'

export const DETAILS_ROUTE = '/api/v1/image/:id'

/** At once from a cached entry (no await on the hot path), a promise when the database is asked. */
export function detailsAnswer<R>(images: ImageService, id: string, answer: (body: DetailsBody) => R): R | Promise<R> {
  const data = images.details(id)
  return data instanceof Promise
    ? data.then((data) => answer({ success: true as const, data }))
    : answer({ success: true as const, data })
}
type DetailsBody = { success: true; data: Awaited<ReturnType<ImageService['details']>> }

/** The list order a query asks for: by date, newest first, unless it names another. */
const listOrder = (query: { sort?: ImageListOrder['by']; order?: ImageListOrder['direction'] }): ImageListOrder => ({
  by: query.sort ?? 'date',
  direction: query.order ?? 'desc',
})

/** The images API of /api/v1: metadata for whoever holds the id, the rest with an API key. */
export function apiImageRoutes(images: ImageService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-images-api' })
    .use(guard)
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
}

/**
 * The same operations for the website's dashboard, authenticated by the session (JWT) instead of an API key.
 * /api/v1 stays key-only, as the contract says; these reuse the same service functions and response shapes.
 */
export function dashboardImageRoutes(images: ImageService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-images-dashboard' })
    .use(guard)
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
}
