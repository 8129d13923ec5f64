import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { KeyBody, KeyCreatedResponse, KeyIdParams, KeyListResponse, Success } from './model'
import { type AuthService, publicApiKey } from './service'

/** The account's API keys: listed, made (the secret shown once) and revoked. */
export function keyRoutes(auth: AuthService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-auth-keys' })
    .use(guard)
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
}
