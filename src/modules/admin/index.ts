import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { pageCount, parsePage } from '../../http/pagination'
import { Success } from '../../http/schemas'
import { UserResponse } from '../auth/model'
import { publicUser } from '../auth/service'
import { ImageIdParams } from '../images/model'
import {
  AdminUserCreate,
  AdminUserPatch,
  AdminUserResponse,
  AdminUsersQuery,
  AdminUsersResponse,
  InviteBody,
  InviteCreatedResponse,
  InviteListResponse,
  InviteParams,
  UserIdParams,
} from './model'
import type { AdminService } from './service'

export function adminModule(admin: AdminService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-admin', prefix: '/api/admin' })
    .use(guard)
    .get(
      '/users',
      async ({ query }) => {
        const { page, limit } = parsePage(query, { limit: 20, maxLimit: 100 })
        const { users, total } = await admin.listUsers({ page, limit, q: query.q })
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
      async ({ params, body }) => ({
        success: true as const,
        user: await admin.describeUser(await admin.updateUser(params.id, body)),
      }),
      {
        admin: true,
        params: UserIdParams,
        body: AdminUserPatch,
        response: { 200: AdminUserResponse, ...errors(400, 401, 403, 404) },
        detail: {
          tags: ['Admin'],
          summary:
            'Change role, ban, verified flag or limit overrides (storageLimit, uploadsPerHour; null: the tier default); a ban ends every session of the account',
        },
      },
    )
    .delete(
      '/users/:id',
      async ({ user, params }) => {
        await admin.deleteUser(user, params.id)
        return { success: true as const }
      },
      {
        admin: true,
        params: UserIdParams,
        response: { 200: Success, ...errors(400, 401, 403, 404, 409) },
        detail: {
          tags: ['Admin'],
          summary:
            'Delete an account with everything it made (images and their files, albums, embed profiles, keys, sessions, webhooks); its tokens and keys answer 401 at once. Your own account: 409 (use DELETE /api/account)',
        },
      },
    )
    .post(
      '/users',
      async ({ body, set }) => {
        const user = await admin.createUser(body)
        set.status = 201
        return { success: true as const, user: publicUser(user) }
      },
      {
        admin: true,
        body: AdminUserCreate,
        response: { 201: UserResponse, ...errors(400, 401, 403, 409) },
        detail: {
          tags: ['Admin'],
          summary: 'Create an account (whatever REGISTRATION says), its email already verified',
        },
      },
    )
    .post(
      '/invites',
      async ({ body, user, set }) => {
        const invite = await admin.createInvite(user.id, { expiresIn: body.expiresIn, uses: body.uses ?? 1 })
        set.status = 201
        return { success: true as const, ...invite }
      },
      {
        admin: true,
        body: InviteBody,
        response: { 201: InviteCreatedResponse, ...errors(400, 401, 403) },
        detail: { tags: ['Admin'], summary: 'Create an invite code (REGISTRATION=invite: registering needs one)' },
      },
    )
    .get('/invites', async () => ({ success: true as const, invites: await admin.listInvites() }), {
      admin: true,
      response: { 200: InviteListResponse, ...errors(401, 403) },
      detail: { tags: ['Admin'], summary: 'List invites, newest first (revoked ones are gone)' },
    })
    .delete(
      '/invites/:id',
      async ({ params }) => {
        await admin.revokeInvite(params.id)
        return { success: true as const }
      },
      {
        admin: true,
        params: InviteParams,
        response: { 200: Success, ...errors(400, 401, 403, 404) },
        detail: { tags: ['Admin'], summary: 'Revoke an invite, by id or code; accounts it admitted stay' },
      },
    )
}
