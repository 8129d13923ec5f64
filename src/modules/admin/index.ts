import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { pageCount, parsePage } from '../../http/pagination'
import { Success } from '../../http/schemas'
import { UserResponse } from '../auth/model'
import { publicUser } from '../auth/service'
import { ImageIdParams } from '../images/model'
import { AdminUserPatch, AdminUsersQuery, AdminUsersResponse, UserIdParams } from './model'
import type { AdminService } from './service'

export function adminModule(admin: AdminService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-admin', prefix: '/api/admin' })
    .use(guard)
    .get(
      '/users',
      ({ query }) => {
        const { page, limit } = parsePage(query, { limit: 20, maxLimit: 100 })
        const { users, total } = admin.listUsers({ page, limit, q: query.q })
        return { success: true as const, users, total, page, limit, pages: pageCount(total, limit) }
      },
      {
        admin: true,
        query: AdminUsersQuery,
        response: { 200: AdminUsersResponse, ...errors(400, 401, 403) },
        detail: { tags: ['Admin'], summary: 'List accounts' },
      },
    )
    .delete(
      '/images/:id',
      async ({ params }) => {
        await admin.deleteImage(params.id)
        return { success: true as const }
      },
      {
        admin: true,
        params: ImageIdParams,
        response: { 200: Success, ...errors(401, 403, 404) },
        detail: { tags: ['Admin'], summary: 'Delete any image, files included' },
      },
    )
    .patch(
      '/users/:id',
      ({ params, body }) => ({ success: true as const, user: publicUser(admin.updateUser(params.id, body)) }),
      {
        admin: true,
        params: UserIdParams,
        body: AdminUserPatch,
        response: { 200: UserResponse, ...errors(400, 401, 403, 404) },
        detail: { tags: ['Admin'], summary: 'Change role, ban or verified flag' },
      },
    )
}
