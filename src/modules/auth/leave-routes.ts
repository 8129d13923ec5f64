import { Elysia, t } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import type { AccountExport } from './export'
import type { AccountLeave } from './leave'
import { DeleteAccountBody, PasskeyAuthenticationOptionsResponse, Success } from './model'
import { asAuthentication } from './passkey-routes'

/** Leaving: the account's data as a zip, and the account's deletion. */
export function leaveRoutes(
  leave: { exportData: AccountExport; leave: AccountLeave },
  guard: ReturnType<typeof authGuard>,
) {
  return new Elysia({ name: 'module-auth-leave' })
    .use(guard)
    .get(
      '/api/account/export',
      ({ user }) => {
        const { body, fileName } = leave.exportData(user)
        return new Response(body, {
          headers: {
            'content-type': 'application/zip',
            'content-disposition': `attachment; filename="${fileName}"`,
            'cache-control': 'private, no-store',
          },
        })
      },
      {
        session: true,
        // Answered as a Response (a zip, streamed), which Elysia does not validate: the schema is for the OpenAPI document.
        response: {
          200: t.String({
            format: 'binary',
            description:
              'A zip: account.json, images.json, albums.json, embeds.json and every original under images/<id>.<ext>',
          }),
          ...errors(401, 403),
        },
        detail: {
          tags: ['Auth'],
          summary:
            'Download your data: a zip of your originals and of what your account made (no password hash, key hash or two-factor secret), streamed',
        },
      },
    )
    .post(
      '/api/account/delete/options',
      async ({ user }) => ({ success: true as const, options: await leave.leave.passkeyOptions(user) }),
      {
        session: true,
        response: { 200: PasskeyAuthenticationOptionsResponse, ...errors(400, 401, 403) },
        detail: {
          tags: ['Auth'],
          summary:
            'Confirm your account’s deletion with a passkey instead of the password: options for navigator.credentials.get() (your passkeys only); 400 without one',
        },
      },
    )
    .delete(
      '/api/account',
      async ({ user, body }) => {
        const { passkey, ...proof } = body ?? {}
        await leave.leave.leave(user, passkey === undefined ? proof : { ...proof, passkey: asAuthentication(passkey) })
        return { success: true as const }
      },
      {
        session: true,
        body: DeleteAccountBody,
        response: { 200: Success, ...errors(400, 401, 403, 409, 429) },
        detail: {
          tags: ['Auth'],
          summary:
            'Delete your account with everything it made (images and their files, albums, embed profiles, keys, sessions, webhooks), confirmed by your password, a two-factor code or a passkey; wrong: 403, nothing deleted; the last admin: 409',
        },
      },
    )
}
