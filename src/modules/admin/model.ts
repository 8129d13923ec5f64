import { t } from 'elysia'
import { Nullable, NumericId, PageQuery, Timestamp } from '../../http/schemas'
import { RegisterBody, UserModel } from '../auth/model'

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

export const AdminUserCreate = t.Composite([
  t.Omit(RegisterBody, ['invite']),
  t.Object({ role: t.Optional(t.Union([t.Literal('user'), t.Literal('admin')], { default: 'user' })) }),
])

/** Invites: at most a year, at most 1000 registrations each. */
export const INVITE_LIMITS = { maxSeconds: 365 * 24 * 3600, maxUses: 1000 } as const

export const InviteBody = t.Object({
  expiresIn: t.Optional(
    t.Integer({
      minimum: 60,
      maximum: INVITE_LIMITS.maxSeconds,
      description: 'Seconds from now; omitted: never expires',
    }),
  ),
  uses: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: INVITE_LIMITS.maxUses,
      default: 1,
      description: 'How many registrations it admits',
    }),
  ),
})

const InviteFields = {
  id: t.Integer(),
  code: t.String(),
  url: t.String({ description: 'The register page with the code filled in' }),
  uses: t.Integer({ description: 'Registrations it admits in all' }),
  used: t.Integer({ description: 'Registrations it admitted so far' }),
  expiresAt: Nullable(Timestamp),
  createdAt: Timestamp,
}
export const InviteModel = t.Object(InviteFields)
export const InviteCreatedResponse = t.Object({ success: t.Literal(true), ...InviteFields })
export const InviteListResponse = t.Object({ success: t.Literal(true), invites: t.Array(InviteModel) })
export const InviteParams = t.Object({
  id: t.String({ pattern: '^[A-Za-z0-9]{1,64}$', description: 'The invite id or its code' }),
})
