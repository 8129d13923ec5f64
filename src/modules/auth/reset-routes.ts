import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { ForgotBody, ResetBody, Success } from './model'
import type { AuthService } from './service'

/** A forgotten password: the mailed reset token, and the new password set with it. */
export function resetRoutes(auth: AuthService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-auth-reset' })
    .use(guard)
    .group('/api/auth', { detail: { tags: ['Auth'] } }, (app) =>
      app
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
        ),
    )
}
