import { t } from 'elysia'
import { NumericId, Success, Timestamp } from '../../http/schemas'

export const UserModel = t.Object({
  id: t.Integer(),
  username: t.String(),
  email: t.String(),
  role: t.Union([t.Literal('user'), t.Literal('admin')]),
  emailVerified: t.Boolean(),
  privateAccount: t.Boolean(),
  createdAt: Timestamp,
})

export const ApiKeyModel = t.Object({
  id: t.Integer(),
  name: t.String(),
  prefix: t.String({ description: 'First 8 characters of the secret' }),
  createdAt: Timestamp,
  lastUsedAt: t.Union([Timestamp, t.Null()]),
})

export const RegisterBody = t.Object({
  username: t.String({ description: '3-32 of [A-Za-z0-9_-]' }),
  email: t.String(),
  password: t.String({ description: '8-256 characters' }),
})

export const LoginBody = t.Object({
  username: t.String({ description: 'Username or email' }),
  password: t.String(),
})

export const SessionResponse = t.Object({ success: t.Literal(true), token: t.String(), user: UserModel })
export const UserResponse = t.Object({ success: t.Literal(true), user: UserModel })
export const VerifyBody = t.Object({ token: t.String({ minLength: 1 }) })
export const AccountBody = t.Object({ privateAccount: t.Optional(t.Boolean()) })
export const KeyBody = t.Object({ name: t.String({ minLength: 1, maxLength: 100 }) })
export const KeyListResponse = t.Object({ success: t.Literal(true), keys: t.Array(ApiKeyModel) })
export const KeyCreatedResponse = t.Object({
  success: t.Literal(true),
  key: ApiKeyModel,
  apiKey: t.String({ description: 'The secret, shown only once' }),
})
export const KeyIdParams = t.Object({ id: NumericId() })
export { Success }
