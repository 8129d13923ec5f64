import { t } from 'elysia'
import { NumericId, PageQuery } from '../../http/schemas'
import { UserModel } from '../auth/model'

export const AdminUser = t.Composite([
  UserModel,
  t.Object({ banned: t.Boolean(), totalImages: t.Integer(), storageUsed: t.Integer() }),
])

export const AdminUsersQuery = t.Composite([PageQuery, t.Object({ q: t.Optional(t.String({ maxLength: 100 })) })])

export const AdminUsersResponse = t.Object({
  success: t.Literal(true),
  users: t.Array(AdminUser),
  total: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  pages: t.Integer(),
})

export const AdminUserPatch = t.Object({
  role: t.Optional(t.Union([t.Literal('user'), t.Literal('admin')])),
  banned: t.Optional(t.Boolean()),
  emailVerified: t.Optional(t.Boolean()),
})

export const UserIdParams = t.Object({ id: NumericId() })
