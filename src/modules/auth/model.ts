import { t } from 'elysia'
import { NumericId, Success, Timestamp } from '../../http/schemas'

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

export const RegisterBody = t.Object({
  username: t.String({ description: `${USERNAME_LENGTH.min}-${USERNAME_LENGTH.max} of [A-Za-z0-9_-]` }),
  email: t.String(),
  password: t.String({ description: `${PASSWORD_LENGTH.min}-${PASSWORD_LENGTH.max} characters` }),
})

/** Longest two-factor code accepted (a TOTP code is 6 digits, a recovery code 14 characters). */
export const CODE_MAX = 64
const code = (description: string) => t.String({ minLength: 1, maxLength: CODE_MAX, description })

export const LoginBody = t.Object({
  username: t.String({ description: 'Username or email' }),
  password: t.String(),
  code: t.Optional(code('With two-factor on: the current TOTP code or a recovery code')),
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
export const TotpCodeBody = t.Object({
  code: code('The current 6-digit code of the authenticator app (or, to turn it off, a recovery code)'),
})
export const TotpStatusResponse = t.Object({
  success: t.Literal(true),
  enabled: t.Boolean(),
  recoveryCodesLeft: t.Integer({ description: 'Unused recovery codes (0 while two-factor is off)' }),
})
export const TotpSetupResponse = t.Object({
  success: t.Literal(true),
  secret: t.String({ description: 'The shared secret, base32 (for typing into an authenticator app)' }),
  otpauthUrl: t.String({ description: 'otpauth://totp/... URL of the secret' }),
  qrCode: t.String({ description: 'The otpauth URL as a QR code: an SVG data URL, made on the server' }),
})
export const TotpEnabledResponse = t.Object({
  success: t.Literal(true),
  recoveryCodes: t.Array(t.String(), { description: 'Single-use codes for when the device is lost: shown only once' }),
})
export const OidcStartQuery = t.Object({
  next: t.Optional(t.String({ description: 'A path of this site to go to after signing in (else the dashboard)' })),
})
export { Success }
