import { t } from 'elysia'
import { Nullable, NumericId, Success, Timestamp } from '../../http/schemas'

/** Account rules (DECISIONS.md), used by the service, the schemas and the register form. */
export const USERNAME_LENGTH = { min: 3, max: 32 } as const
/** A username, as a pattern without anchors (HTML's `pattern` wants `-` escaped in a class). */
export const USERNAME_PATTERN = `[A-Za-z0-9_\\-]{${USERNAME_LENGTH.min},${USERNAME_LENGTH.max}}`
export const PASSWORD_LENGTH = { min: 8, max: 256 } as const
export const KEY_NAME_MAX = 100

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

const NewPassword = t.String({ description: `${PASSWORD_LENGTH.min}-${PASSWORD_LENGTH.max} characters` })
/** Longer than any code or token we issue; bounds what a lookup is asked with. */
const CODE_MAX = 128

export const RegisterBody = t.Object({
  username: t.String({ description: `${USERNAME_LENGTH.min}-${USERNAME_LENGTH.max} of [A-Za-z0-9_-]` }),
  email: t.String(),
  password: NewPassword,
  invite: t.Optional(
    t.String({ maxLength: CODE_MAX, description: 'An invite code: required when REGISTRATION=invite, else ignored' }),
  ),
})

export const SessionModel = t.Object({
  id: t.String(),
  createdAt: Timestamp,
  lastUsedAt: Nullable(Timestamp),
  userAgent: Nullable(t.String()),
  ip: Nullable(t.String()),
  current: t.Boolean({ description: 'The session of the token this request was sent with' }),
})
export const SessionListResponse = t.Object({ success: t.Literal(true), sessions: t.Array(SessionModel) })
export const SessionIdParams = t.Object({ id: t.String({ maxLength: CODE_MAX }) })
export const PasswordChangeBody = t.Object({
  currentPassword: t.String({ maxLength: PASSWORD_LENGTH.max }),
  newPassword: NewPassword,
})
export const ForgotBody = t.Object({ email: t.String({ minLength: 1, maxLength: 254 }) })
export const ResetBody = t.Object({ token: t.String({ minLength: 1, maxLength: CODE_MAX }), newPassword: NewPassword })

export const LoginBody = t.Object({
  username: t.String({ description: 'Username or email' }),
  password: t.String(),
})

export const SessionResponse = t.Object({ success: t.Literal(true), token: t.String(), user: UserModel })
export const UserResponse = t.Object({ success: t.Literal(true), user: UserModel })
export const VerifyBody = t.Object({ token: t.String({ minLength: 1 }) })
export const AccountBody = t.Object({ privateAccount: t.Optional(t.Boolean()) })
export const KeyBody = t.Object({ name: t.String({ minLength: 1, maxLength: KEY_NAME_MAX }) })
export const KeyListResponse = t.Object({ success: t.Literal(true), keys: t.Array(ApiKeyModel) })
export const KeyCreatedResponse = t.Object({
  success: t.Literal(true),
  key: ApiKeyModel,
  apiKey: t.String({ description: 'The secret, shown only once' }),
})
export const KeyIdParams = t.Object({ id: NumericId() })
export { Success }
