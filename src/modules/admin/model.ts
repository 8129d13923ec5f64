import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Nullable, NumericId, PageQuery, Timestamp } from '../../http/schemas'
import { RegisterBody, UserModel } from '../auth/model'

/**
 * Bounds of an account's limit overrides: bytes up to what a JS number holds exactly, uploads up to what the column
 * (a 32-bit integer on PostgreSQL) holds.
 */
export const OVERRIDE_MAX = { storageLimit: Number.MAX_SAFE_INTEGER, uploadsPerHour: 2_147_483_647 } as const

/**
 * An override as PATCH takes it: a whole number from 0, or null (back to the tier's); anything else a 400 naming it.
 * TypeBox's own integer: the framework's `t.Integer` would also take a string of digits.
 */
const override = (field: keyof typeof OVERRIDE_MAX, what: string) =>
  t.Union([Type.Integer({ minimum: 0, maximum: OVERRIDE_MAX[field] }), t.Null()], {
    description: `${what}; null: the tier's (docs/accounts.md)`,
    error: `${field} must be a whole number from 0 to ${OVERRIDE_MAX[field]}, or null for the tier's limit`,
  })

const StorageLimitOverride = override('storageLimit', 'Storage limit of this account, bytes')
const UploadsPerHourOverride = override('uploadsPerHour', 'Uploads per hour of this account')

export const AdminUser = t.Composite([
  UserModel,
  t.Object({
    banned: t.Boolean(),
    totalImages: t.Integer(),
    storageUsed: t.Integer(),
    storageLimit: StorageLimitOverride,
    uploadsPerHour: UploadsPerHourOverride,
    effective: t.Object(
      {
        storageLimit: Nullable(t.Integer({ description: 'Bytes; null: unlimited' })),
        uploadsPerHour: Nullable(t.Integer({ description: 'null: unlimited' })),
      },
      { description: "The limits in force: the account's overrides, else its tier's" },
    ),
  }),
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
  storageLimit: t.Optional(StorageLimitOverride),
  uploadsPerHour: t.Optional(UploadsPerHourOverride),
})

export const AdminUserResponse = t.Object({ success: t.Literal(true), user: AdminUser })

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
