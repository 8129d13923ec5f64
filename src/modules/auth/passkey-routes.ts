import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import {
  PasskeyAuthenticationOptionsResponse,
  PasskeyCreatedResponse,
  PasskeyIdParams,
  PasskeyListResponse,
  PasskeyLoginBody,
  PasskeyRegisterBody,
  PasskeyRegistrationOptionsResponse,
  SessionResponse,
  Success,
} from './model'
import { type PasskeyService, publicPasskey } from './passkeys'
import { type AuthService, publicUser } from './service'
import { originOf } from './session-origin'

// The browser's answers are checked by the schemas for shape and size; the WebAuthn library checks the rest.
const asRegistration = (response: unknown) => response as RegistrationResponseJSON
export const asAuthentication = (response: unknown) => response as AuthenticationResponseJSON

export function passkeysModule(passkeys: PasskeyService, auth: AuthService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-passkeys' })
    .use(guard)
    .group('/api/auth/passkeys', { detail: { tags: ['Auth'] } }, (app) =>
      app
        .get(
          '',
          async ({ user }) => ({ success: true as const, passkeys: (await passkeys.list(user)).map(publicPasskey) }),
          {
            session: true,
            response: { 200: PasskeyListResponse, ...errors(401, 403) },
            detail: { summary: 'List your passkeys' },
          },
        )
        .post(
          '/register/options',
          async ({ user }) => ({ success: true as const, options: await passkeys.registrationOptions(user) }),
          {
            session: true,
            response: { 200: PasskeyRegistrationOptionsResponse, ...errors(400, 401, 403) },
            detail: {
              summary:
                'Start registering a passkey: options for navigator.credentials.create() (at most 20 per account)',
            },
          },
        )
        .post(
          '/register',
          async ({ user, body, set }) => {
            const passkey = await passkeys.register(user, asRegistration(body.response), body.name ?? '')
            set.status = 201
            return { success: true as const, passkey: publicPasskey(passkey) }
          },
          {
            session: true,
            body: PasskeyRegisterBody,
            response: { 201: PasskeyCreatedResponse, ...errors(400, 401, 403) },
            detail: {
              summary:
                'Finish registering a passkey with the browser’s answer to the options (their challenge is used up, whatever the outcome)',
            },
          },
        )
        .post('/login/options', async () => ({ success: true as const, options: await passkeys.loginOptions() }), {
          response: { 200: PasskeyAuthenticationOptionsResponse, ...errors(429) },
          detail: {
            summary:
              'Start signing in with a passkey: options for navigator.credentials.get() (any passkey of this site, no username)',
          },
        })
        .post(
          '/login',
          async ({ body, request, clientIp }) => {
            const user = await passkeys.login(asAuthentication(body.response))
            const token = await auth.startSession(user, originOf(request, clientIp))
            return { success: true as const, token, user: publicUser(user) }
          },
          {
            body: PasskeyLoginBody,
            response: { 200: SessionResponse, ...errors(400, 401, 403) },
            detail: {
              summary:
                'Sign in with a passkey instead of a password: the browser’s answer to the login options; answers as POST /api/auth/login',
            },
          },
        )
        .delete(
          '/:id',
          async ({ user, params }) => {
            await passkeys.remove(user, params.id)
            return { success: true as const }
          },
          {
            session: true,
            params: PasskeyIdParams,
            response: { 200: Success, ...errors(400, 401, 403, 404) },
            detail: { summary: 'Remove one of your passkeys: it no longer signs in' },
          },
        ),
    )
}
