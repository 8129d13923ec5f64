import { t } from 'elysia'
import { Nullable, NumericId, Success, Timestamp } from '../../http/schemas'

/** Account rules (DECISIONS.md), used by the service, the schemas and the register form. */
export const USERNAME_LENGTH = { min: 3, max: 32 } as const
/** A username, as a pattern without anchors (HTML's `pattern` wants `-` escaped in a class). */
export const USERNAME_PATTERN = `[A-Za-z0-9_\\-]{${USERNAME_LENGTH.min},${USERNAME_LENGTH.max}}`
export const PASSWORD_LENGTH = { min: 8, max: 256 } as const
export const KEY_NAME_MAX = 100

export const UserModel = t.Object(
  {
    id: t.Integer(),
    username: t.String(),
    email: t.String(),
    role: t.Union([t.Literal('user'), t.Literal('admin')]),
    emailVerified: t.Boolean(),
    privateAccount: t.Boolean(),
    createdAt: Timestamp,
  },
  { $id: 'Account' },
)

export const ApiKeyModel = t.Object({
  id: t.Integer(),
  name: t.String(),
  prefix: t.String({ description: 'First 8 characters of the secret' }),
  createdAt: Timestamp,
  lastUsedAt: t.Union([Timestamp, t.Null()]),
})

const NewPassword = t.String({ description: `${PASSWORD_LENGTH.min}-${PASSWORD_LENGTH.max} characters` })
/** Longer than any invite, session id or reset token we issue; bounds what a lookup is asked with. */
const TOKEN_MAX = 128

export const RegisterBody = t.Object({
  username: t.String({ description: `${USERNAME_LENGTH.min}-${USERNAME_LENGTH.max} of [A-Za-z0-9_-]` }),
  email: t.String(),
  password: NewPassword,
  invite: t.Optional(
    t.String({ maxLength: TOKEN_MAX, description: 'An invite code: required when REGISTRATION=invite, else ignored' }),
  ),
})

/** Longest two-factor code accepted (a TOTP code is 6 digits, a recovery code 14 characters). */
export const CODE_MAX = 64
const code = (description: string) => t.String({ minLength: 1, maxLength: CODE_MAX, description })
export const SessionModel = t.Object({
  id: t.String(),
  createdAt: Timestamp,
  lastUsedAt: Nullable(Timestamp),
  userAgent: Nullable(t.String()),
  ip: Nullable(t.String()),
  current: t.Boolean({ description: 'The session of the token this request was sent with' }),
})
export const SessionListResponse = t.Object({ success: t.Literal(true), sessions: t.Array(SessionModel) })
export const SessionIdParams = t.Object({ id: t.String({ pattern: `^[A-Za-z0-9_-]{1,${TOKEN_MAX}}$` }) })
export const PasswordChangeBody = t.Object({
  currentPassword: t.String({ maxLength: PASSWORD_LENGTH.max }),
  newPassword: NewPassword,
})
export const ForgotBody = t.Object({ email: t.String({ minLength: 1, maxLength: 254 }) })
export const ResetBody = t.Object({ token: t.String({ minLength: 1, maxLength: TOKEN_MAX }), newPassword: NewPassword })

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

export const PASSKEY_NAME_MAX = 100
/** Passkeys per account, at most. */
export const MAX_PASSKEYS = 20
/** Each base64url field of a browser's WebAuthn answer, at most (real ones are a few hundred bytes). */
const WEBAUTHN_FIELD_MAX = 16_384
const B64 = (description: string) => t.String({ maxLength: WEBAUTHN_FIELD_MAX, description })

export const PasskeyModel = t.Object({
  id: t.Integer(),
  name: t.String(),
  transports: t.Array(t.String(), {
    description: 'How the browser reaches the authenticator (internal, usb, hybrid...)',
  }),
  createdAt: Timestamp,
  lastUsedAt: t.Union([Timestamp, t.Null()]),
})
export const PasskeyListResponse = t.Object({ success: t.Literal(true), passkeys: t.Array(PasskeyModel) })
export const PasskeyCreatedResponse = t.Object({ success: t.Literal(true), passkey: PasskeyModel })
export const PasskeyIdParams = t.Object({ id: NumericId() })

/** What the server's options carry for the browser (the rest as WebAuthn defines it). */
const options = (description: string) =>
  t.Object({ challenge: t.String(), timeout: t.Optional(t.Integer()) }, { additionalProperties: true, description })
export const PasskeyRegistrationOptionsResponse = t.Object({
  success: t.Literal(true),
  options: options(
    'PublicKeyCredentialCreationOptionsJSON (WebAuthn Level 3) for navigator.credentials.create(); its challenge is answerable once, for 5 minutes',
  ),
})
export const PasskeyAuthenticationOptionsResponse = t.Object({
  success: t.Literal(true),
  options: options(
    'PublicKeyCredentialRequestOptionsJSON (WebAuthn Level 3) for navigator.credentials.get(); its challenge is answerable once, for 5 minutes',
  ),
})

/** The browser's answers, as PublicKeyCredential.toJSON() gives them (binary fields in base64url). */
const credentialFields = {
  id: B64('Credential id'),
  rawId: B64('Credential id'),
  type: t.Literal('public-key'),
  clientExtensionResults: t.Object({}, { additionalProperties: true }),
  authenticatorAttachment: t.Optional(t.Union([t.Literal('platform'), t.Literal('cross-platform')])),
}
export const PasskeyRegisterBody = t.Object({
  name: t.Optional(
    t.String({ maxLength: PASSKEY_NAME_MAX, description: 'A name to recognise it by; default "Passkey"' }),
  ),
  response: t.Object(
    {
      ...credentialFields,
      response: t.Object(
        {
          clientDataJSON: B64('Client data'),
          attestationObject: B64('Attestation object'),
          transports: t.Optional(t.Array(t.String({ maxLength: 32 }), { maxItems: 10 })),
        },
        { additionalProperties: true },
      ),
    },
    {
      additionalProperties: true,
      description: 'The answer of navigator.credentials.create() (RegistrationResponseJSON)',
    },
  ),
})
export const PasskeyLoginBody = t.Object({
  response: t.Object(
    {
      ...credentialFields,
      response: t.Object(
        {
          clientDataJSON: B64('Client data'),
          authenticatorData: B64('Authenticator data'),
          signature: B64('Signature'),
          userHandle: t.Optional(B64('User handle')),
        },
        { additionalProperties: true },
      ),
    },
    {
      additionalProperties: true,
      description: 'The answer of navigator.credentials.get() (AuthenticationResponseJSON)',
    },
  ),
})

export const LoginBody = t.Object({
  username: t.String({ description: 'Username or email' }),
  password: t.String(),
  code: t.Optional(code('With two-factor on: the current TOTP code or a recovery code')),
  passkey: t.Optional({
    ...PasskeyLoginBody.properties.response,
    description:
      'With two-factor on, in place of `code`: the answer of navigator.credentials.get() to the `passkeyOptions` of the 401 that asked for the second factor (AuthenticationResponseJSON)',
  }),
})
/** The 401 of a login: a wrong password, or (the password was right) the second factor asked for or refused. */
export const LoginRefusedBody = t.Object(
  {
    error: t.String(),
    twoFactor: t.Optional(
      t.Literal('totp', {
        description: 'The password was right and the account has two-factor on: send `code` (or `passkey`) too',
      }),
    ),
    passkeyOptions: t.Optional(
      options(
        'With `twoFactor`, when the account has passkeys: PublicKeyCredentialRequestOptionsJSON for navigator.credentials.get(), limited to its passkeys; its answer, sent as `passkey`, replaces the code. Each such 401 carries a new challenge, answerable once, for 5 minutes',
      ),
    ),
  },
  { additionalProperties: true, description: 'Error' },
)

export const DeleteAccountBody = t.Object({
  password: t.Optional(t.String({ maxLength: PASSWORD_LENGTH.max, description: 'The account’s password' })),
  code: t.Optional(
    code('Instead of the password: a current two-factor code or a recovery code (accounts with two-factor on)'),
  ),
  passkey: t.Optional({
    ...PasskeyLoginBody.properties.response,
    description:
      'Instead of the password: the answer of navigator.credentials.get() to the options of POST /api/account/delete/options (AuthenticationResponseJSON)',
  }),
})
