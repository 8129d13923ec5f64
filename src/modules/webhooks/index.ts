import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { Success } from '../../http/schemas'
import {
  WEBHOOKS_DESCRIPTION,
  WebhookCreateBody,
  WebhookCreatedResponse,
  WebhookIdParams,
  WebhookListResponse,
} from './model'
import type { WebhookService } from './service'

/** Per-account webhook endpoints (JWT). */
export function webhooksModule(webhooks: WebhookService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-webhooks' })
    .use(guard)
    .group('/api/webhooks', { detail: { tags: ['Webhooks'] } }, (app) =>
      app
        .get('', ({ user }) => webhooks.list(user), {
          session: true,
          response: { 200: WebhookListResponse, ...errors(401, 403) },
          detail: { summary: 'List your webhooks (secrets are not shown again)', description: WEBHOOKS_DESCRIPTION },
        })
        .post(
          '',
          async ({ user, body, set }) => {
            const created = await webhooks.create(user, body)
            set.status = 201
            return created
          },
          {
            session: true,
            body: WebhookCreateBody,
            response: { 201: WebhookCreatedResponse, ...errors(400, 401, 403) },
            detail: {
              summary: 'Add a webhook: image.uploaded and/or image.deleted events; the secret is shown once',
              description: WEBHOOKS_DESCRIPTION,
            },
          },
        )
        .delete('/:id', ({ user, params }) => webhooks.remove(user, params.id), {
          session: true,
          params: WebhookIdParams,
          response: { 200: Success, ...errors(400, 401, 403, 404) },
          detail: { summary: 'Delete a webhook (404 if it is not yours)' },
        }),
    )
}
