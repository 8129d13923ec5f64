import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { Success } from '../../http/schemas'
import {
  AddImageBody,
  AlbumCreateBody,
  AlbumIdParams,
  AlbumImageParams,
  AlbumListResponse,
  AlbumResponse,
  AlbumUpdateBody,
  AlbumViewHeaders,
  AlbumViewQuery,
  AlbumViewResponse,
} from './model'
import type { AlbumService } from './service'

export function albumsModule(albums: AlbumService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-albums' })
    .use(guard)
    .group('/api/albums', { detail: { tags: ['Albums'] } }, (app) =>
      app
        .get('', async ({ user }) => ({ success: true as const, albums: await albums.list(user) }), {
          session: true,
          response: { 200: AlbumListResponse, ...errors(401, 403) },
          detail: { summary: 'List your albums, newest first (deleted ones left out)' },
        })
        .post(
          '',
          async ({ user, body, set }) => {
            const album = await albums.create(user, body)
            set.status = 201
            return { success: true as const, album }
          },
          {
            session: true,
            body: AlbumCreateBody,
            response: { 201: AlbumResponse, ...errors(400, 401, 403) },
            detail: { summary: 'Create an album (private unless isPublic is true)' },
          },
        )
        .get(
          '/:id',
          ({ user, params, query, headers, clientIp }) =>
            albums.view(user, params.id, headers['x-album-password'] ?? query.password, clientIp),
          {
            optionalSession: true,
            params: AlbumIdParams,
            query: AlbumViewQuery,
            headers: AlbumViewHeaders,
            response: { 200: AlbumViewResponse, ...errors(401, 403, 404, 429) },
            detail: {
              summary: 'An album with its images',
              description:
                'The owner (JWT) sees it whole. Anyone else: public albums only (private or deleted: 404), password-protected ones ' +
                'need X-Album-Password or ?password= (missing or wrong: 403; too many wrong ones per album or per address: 429 with ' +
                'Retry-After), and private images are left out.',
            },
          },
        )
        .put(
          '/:id',
          async ({ user, params, body }) => ({
            success: true as const,
            album: await albums.update(user, params.id, body),
          }),
          {
            session: true,
            params: AlbumIdParams,
            body: AlbumUpdateBody,
            response: { 200: AlbumResponse, ...errors(400, 401, 403, 404) },
            detail: { summary: 'Update title, description, visibility or password' },
          },
        )
        .delete(
          '/:id',
          async ({ user, params }) => {
            await albums.remove(user, params.id)
            return { success: true as const }
          },
          {
            session: true,
            params: AlbumIdParams,
            response: { 200: Success, ...errors(401, 403, 404) },
            detail: { summary: 'Delete an album (soft delete: its images stay; the album is 404 afterwards)' },
          },
        )
        .post(
          '/:id/images',
          async ({ user, params, body }) => ({
            success: true as const,
            album: await albums.addImage(user, params.id, body.imageId),
          }),
          {
            session: true,
            params: AlbumIdParams,
            body: AddImageBody,
            response: { 200: AlbumResponse, ...errors(400, 401, 403, 404) },
            detail: { summary: 'Add one of your images to the album (adding it again is a no-op)' },
          },
        )
        .delete(
          '/:id/images/:imageId',
          async ({ user, params }) => {
            await albums.removeImage(user, params.id, params.imageId)
            return { success: true as const }
          },
          {
            session: true,
            params: AlbumImageParams,
            response: { 200: Success, ...errors(401, 403, 404) },
            detail: { summary: 'Remove an image from the album (404 when it is not in it)' },
          },
        ),
    )
}
