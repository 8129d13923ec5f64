import { Elysia } from 'elysia'
import { forbidden } from '../../errors'
import type { authGuard } from '../../http/auth'
import { errorResponses, errors } from '../../http/errors'
import { LoginBody, LoginRefusedBody, RegisterBody, SessionResponse } from './model'
import type { OidcService } from './oidc'
import { asAuthentication } from './passkey-routes'
import { type AuthService, publicUser } from './service'
import { originOf } from './session-origin'
import type { TotpService } from './totp'

const noContent = () => new Response(null, { status: 204 })

/** Signing up, in (password, then the second factor) and out. */
export function sessionRoutes(
  auth: AuthService,
  guard: ReturnType<typeof authGuard>,
  opts: { totp: TotpService; oidc: OidcService | null; oidcOnly: boolean },
) {
  return new Elysia({ name: 'module-auth-session' })
    .use(guard)
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
        ),
    )
}
