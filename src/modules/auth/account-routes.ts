import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import {
  AccountBody,
  PasswordChangeBody,
  SessionIdParams,
  SessionListResponse,
  Success,
  UserResponse,
  VerifyBody,
} from './model'
import { type AuthService, publicUser } from './service'

/** The signed-in account: who it is, its email's verification, its sessions, its password and its settings. */
export function accountRoutes(auth: AuthService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-auth-account' })
    .use(guard)
    .group('/api/auth', { detail: { tags: ['Auth'] } }, (app) =>
      app
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
}
