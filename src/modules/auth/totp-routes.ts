import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { Success, TotpCodeBody, TotpEnabledResponse, TotpSetupResponse, TotpStatusResponse } from './model'
import type { TotpService } from './totp'

/** TOTP two-factor routes (the login's code step is in session-routes.ts, on POST /api/auth/login). */
export function totpRoutes(totp: TotpService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-auth-totp' })
    .use(guard)
    .group('/api/auth/totp', { detail: { tags: ['Auth'] } }, (app) =>
      app
        .get('', async ({ user }) => ({ success: true as const, ...(await totp.status(user)) }), {
          session: true,
          response: { 200: TotpStatusResponse, ...errors(401, 403) },
          detail: { summary: 'Whether two-factor (TOTP) is on, and how many recovery codes are left' },
        })
        .post('/setup', async ({ user }) => ({ success: true as const, ...(await totp.setup(user)) }), {
          session: true,
          response: { 200: TotpSetupResponse, ...errors(401, 403, 409) },
          detail: {
            summary:
              'Start setting up two-factor: a new secret for an authenticator app (and its QR code); it is on only after POST /api/auth/totp/enable. 409 when already on',
          },
        })
        .post(
          '/enable',
          async ({ user, body }) => ({ success: true as const, recoveryCodes: await totp.enable(user, body.code) }),
          {
            session: true,
            body: TotpCodeBody,
            response: { 200: TotpEnabledResponse, ...errors(400, 401, 403, 409, 429) },
            detail: {
              summary:
                'Turn two-factor on with a code from the new secret (wrong code: 400); answers ten single-use recovery codes, shown only this once',
            },
          },
        )
        .post(
          '/disable',
          async ({ user, body }) => {
            await totp.disable(user, body.code)
            return { success: true as const }
          },
          {
            session: true,
            body: TotpCodeBody,
            response: { 200: Success, ...errors(400, 401, 403, 429) },
            detail: { summary: 'Turn two-factor off with a current code or a recovery code (wrong code: 400)' },
          },
        ),
    )
}
