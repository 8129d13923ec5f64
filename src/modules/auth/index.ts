import { Elysia } from 'elysia'
import { forbidden } from '../../errors'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import {
  AccountBody,
  KeyBody,
  KeyCreatedResponse,
  KeyIdParams,
  KeyListResponse,
  LoginBody,
  RegisterBody,
  SessionResponse,
  Success,
  UserResponse,
  VerifyBody,
} from './model'
import type { OidcService } from './oidc'
import { oidcRoutes } from './oidc-routes'
import { type AuthService, publicApiKey, publicUser } from './service'
import { issueToken } from './session-token'
import type { TotpService } from './totp'
import { totpRoutes } from './totp-routes'

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
          async ({ body, jwt, set }) => {
            if (opts.oidcOnly) throw forbidden(`Accounts are made by signing in with ${opts.oidc?.name}`)
            const user = await auth.register(body)
            set.status = 201
            return { success: true as const, token: await issueToken(jwt, user), user: publicUser(user) }
          },
          {
            body: RegisterBody,
            response: { 201: SessionResponse, ...errors(400, 403, 409) },
            detail: { summary: 'Create an account' },
          },
        )
        .post(
          '/login',
          async ({ body, jwt, clientIp }) => {
            if (opts.oidcOnly) throw forbidden(`Password login is off: sign in with ${opts.oidc?.name}`)
            const user = await auth.login(body.username, body.password, clientIp)
            opts.totp.checkLogin(user, body.code)
            return { success: true as const, token: await issueToken(jwt, user), user: publicUser(user) }
          },
          {
            body: LoginBody,
            response: { 200: SessionResponse, ...errors(400, 401, 403, 429) },
            detail: {
              summary:
                'Log in; the JWT lasts 7 days. Failed logins are throttled per login name and per address (429 with Retry-After)',
              description:
                'With two-factor on, a right password without `code` answers 401 `{ error, twoFactor: "totp" }` and no token; send it again with `code` (the current TOTP code, or a recovery code; each is accepted once, wrong ones are throttled per account). With OIDC_ONLY=true: 403.',
            },
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
    .patch(
      '/api/account',
      ({ user, body }) => ({ success: true as const, user: publicUser(auth.updateAccount(user, body)) }),
      {
        session: true,
        body: AccountBody,
        response: { 200: UserResponse, ...errors(400, 401, 403) },
        detail: { tags: ['Auth'], summary: 'Change account settings (privateAccount makes every upload private)' },
      },
    )
    .group('/api/keys', { detail: { tags: ['API keys'] } }, (app) =>
      app
        .get('', ({ user }) => ({ success: true as const, keys: auth.listKeys(user).map(publicApiKey) }), {
          session: true,
          response: { 200: KeyListResponse, ...errors(401, 403) },
          detail: { summary: 'List your API keys (secrets are never shown again)' },
        })
        .post(
          '',
          ({ user, body, set }) => {
            const { key, secret } = auth.createKey(user, body.name)
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
          ({ user, params }) => {
            auth.deleteKey(user, params.id)
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
  return opts.oidc ? app.use(oidcRoutes(opts.oidc, guard, { secureCookie: opts.secureCookie })) : app
}
