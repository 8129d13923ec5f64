import { Elysia } from 'elysia'
import { forbidden } from '../../errors'
import type { authGuard } from '../../http/auth'
import { errorResponses, errors } from '../../http/errors'
import {
  AccountBody,
  ForgotBody,
  KeyBody,
  KeyCreatedResponse,
  KeyIdParams,
  KeyListResponse,
  LoginBody,
  LoginRefusedBody,
  PasswordChangeBody,
  RegisterBody,
  ResetBody,
  SessionIdParams,
  SessionListResponse,
  SessionResponse,
  Success,
  UserResponse,
  VerifyBody,
} from './model'
import type { OidcService } from './oidc'
import { oidcRoutes } from './oidc-routes'
import { asAuthentication } from './passkey-routes'
import { type AuthService, publicApiKey, publicUser } from './service'
import { originOf } from './session-origin'
import type { TotpService } from './totp'
import { totpRoutes } from './totp-routes'

const noContent = () => new Response(null, { status: 204 })

/** `oidc`: single sign-on when configured; `oidcOnly`: password login refused (403), the provider is the only way in. */
export function authModule(
  auth: AuthService,
  guard: ReturnType<typeof authGuard>,
  opts: { totp: TotpService; oidc: OidcService | null; oidcOnly: boolean; secureCookie: boolean },
) {
  const app = new Elysia({ name: 'module-auth' })
    .use(guard)
    .use(totpRoutes(opts.totp, guard))
    .group('/api/auth', { detail: { tags: ['Auth'] } }, (app) =>
      app
        .post(
          '/register',
          async ({ body, set, request, clientIp }) => {
            if (opts.oidcOnly) throw forbidden(`Accounts are made by signing in with ${opts.oidc?.name}`)
            const user = await auth.register(body)
            const token = await auth.startSession(user, originOf(request, clientIp))
            set.status = 201
            return { success: true as const, token, user: publicUser(user) }
          },
          {
            body: RegisterBody,
            response: { 201: SessionResponse, ...errors(400, 403, 409) },
            detail: {
              summary:
                'Create an account. REGISTRATION=invite: an unused, unexpired invite code is required (403 otherwise); REGISTRATION=closed: always 403',
            },
          },
        )
        .post(
          '/login',
          async ({ body, request, clientIp }) => {
            if (opts.oidcOnly) throw forbidden(`Password login is off: sign in with ${opts.oidc?.name}`)
            const user = await auth.login(body.username, body.password, clientIp)
            await opts.totp.checkLogin(user, {
              code: body.code,
              passkey: body.passkey && asAuthentication(body.passkey),
            })
            const token = await auth.startSession(user, originOf(request, clientIp))
            return { success: true as const, token, user: publicUser(user) }
          },
          {
            body: LoginBody,
            response: { 200: SessionResponse, ...errors(400, 403, 429), 401: LoginRefusedBody },
            detail: {
              summary:
                'Log in; the JWT lasts 7 days, or until its session ends (logout, password change or reset, ban). Failed logins are throttled per login name and per address (429 with Retry-After)',
              description:
                'With two-factor (TOTP) on, a right password without `code` answers 401 `{ error, twoFactor: "totp" }` and no token, plus `passkeyOptions` when the account has passkeys; send it again with `code` (the current TOTP code, or a recovery code) or with `passkey` (the browser\'s answer to `passkeyOptions`). Each is accepted once; wrong ones are throttled per account, and their 401 asks again (with a new `passkeyOptions`). Passkeys alone do not turn two-factor on. With OIDC_ONLY=true: 403.',
            },
          },
        )
        .post(
          '/logout',
          async ({ user, sessionId }) => {
            await auth.endSession(user, sessionId)
            return noContent()
          },
          {
            session: true,
            // A 204 has no body for a `response` schema: its answers are described here instead.
            detail: {
              summary: 'End the session of this token',
              responses: {
                '204': { description: 'Logged out: this token no longer works' },
                ...errorResponses(401, 403),
              } as never,
            },
          },
        )
        .post(
          '/forgot',
          async ({ body, clientIp }) => {
            await auth.forgotPassword(body.email, clientIp)
            return { success: true as const }
          },
          {
            body: ForgotBody,
            response: { 200: Success, ...errors(400, 429) },
            detail: {
              summary:
                'Ask for a password reset: when an account has this email, a single-use token valid 1 hour is mailed to it (or logged without SMTP). The answer is the same either way; throttled per email and per address (429)',
            },
          },
        )
        .post(
          '/reset',
          async ({ body }) => {
            await auth.resetPassword(body.token, body.newPassword)
            return { success: true as const }
          },
          {
            body: ResetBody,
            response: { 200: Success, ...errors(400) },
            detail: { summary: 'Set a new password with a reset token; every session of the account ends' },
          },
        )
        .get('/me', ({ user }) => ({ success: true as const, user: publicUser(user) }), {
          session: true,
          response: { 200: UserResponse, ...errors(401, 403) },
          detail: { summary: 'The logged-in account' },
        })
        .post(
          '/verify-email',
          async ({ body }) => {
            await auth.verifyEmail(body.token)
            return { success: true as const }
          },
          {
            body: VerifyBody,
            response: { 200: Success, ...errors(400) },
            detail: { summary: 'Verify an email address with its token' },
          },
        )
        .post(
          '/resend-verification',
          async ({ user }) => {
            await auth.resendVerification(user)
            return { success: true as const }
          },
          {
            session: true,
            response: { 200: Success, ...errors(400, 401, 403) },
            detail: { summary: 'Send a new verification token' },
          },
        ),
    )
    .group('/api/account', { detail: { tags: ['Auth'] } }, (app) =>
      app
        .get(
          '/sessions',
          async ({ user, sessionId }) => ({
            success: true as const,
            sessions: await auth.listSessions(user, sessionId),
          }),
          {
            session: true,
            response: { 200: SessionListResponse, ...errors(401, 403) },
            detail: { summary: 'Your signed-in sessions (one per login), most recent first' },
          },
        )
        .delete(
          '/sessions/:id',
          async ({ user, params }) => {
            await auth.endSession(user, params.id)
            return { success: true as const }
          },
          {
            session: true,
            params: SessionIdParams,
            response: { 200: Success, ...errors(401, 403, 404) },
            detail: { summary: "End one of your sessions (its token stops working); another account's is a 404" },
          },
        )
        .put(
          '/password',
          async ({ user, sessionId, body }) => {
            await auth.changePassword(user, sessionId, body)
            return { success: true as const }
          },
          {
            session: true,
            body: PasswordChangeBody,
            response: { 200: Success, ...errors(400, 401, 403, 429) },
            detail: {
              summary:
                'Change your password (the current one is required; wrong guesses count as failed logins); every other session ends, this one stays',
            },
          },
        ),
    )
    .patch(
      '/api/account',
      async ({ user, body }) => ({ success: true as const, user: publicUser(await auth.updateAccount(user, body)) }),
      {
        session: true,
        body: AccountBody,
        response: { 200: UserResponse, ...errors(400, 401, 403) },
        detail: { tags: ['Auth'], summary: 'Change account settings (privateAccount makes every upload private)' },
      },
    )
    .group('/api/keys', { detail: { tags: ['API keys'] } }, (app) =>
      app
        .get(
          '',
          async ({ user }) => ({ success: true as const, keys: (await auth.listKeys(user)).map(publicApiKey) }),
          {
            session: true,
            response: { 200: KeyListResponse, ...errors(401, 403) },
            detail: { summary: 'List your API keys (secrets are never shown again)' },
          },
        )
        .post(
          '',
          async ({ user, body, set }) => {
            const { key, secret } = await auth.createKey(user, body.name)
            set.status = 201
            return { success: true as const, key: publicApiKey(key), apiKey: secret }
          },
          {
            session: true,
            body: KeyBody,
            response: { 201: KeyCreatedResponse, ...errors(400, 401, 403) },
            detail: { summary: 'Create an API key' },
          },
        )
        .delete(
          '/:id',
          async ({ user, params }) => {
            await auth.deleteKey(user, params.id)
            return { success: true as const }
          },
          {
            session: true,
            params: KeyIdParams,
            response: { 200: Success, ...errors(400, 401, 403, 404) },
            detail: { summary: 'Revoke an API key' },
          },
        ),
    )
  return opts.oidc ? app.use(oidcRoutes(opts.oidc, auth, guard, { secureCookie: opts.secureCookie })) : app
}
