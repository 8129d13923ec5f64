import { t } from 'elysia'
import { NumericId, Timestamp } from '../../http/schemas'

/** At most this many webhooks per account. */
export const MAX_WEBHOOKS = 5

const Event = t.Union([t.Literal('image.uploaded'), t.Literal('image.deleted')])

export const WebhookModel = t.Object({
  id: t.Integer({ minimum: 1 }),
  url: t.String({ description: 'The endpoint, normalised' }),
  events: t.Array(Event),
  discord: t.Boolean({ description: 'A Discord webhook URL: deliveries are Discord embeds' }),
  createdAt: Timestamp,
  lastDelivery: t.Union([
    t.Object({
      at: Timestamp,
      status: t.Union([t.Integer(), t.Null()], {
        description: 'HTTP status of the last attempt; 0: no answer (network error, refused address)',
      }),
      error: t.Union([t.String(), t.Null()]),
    }),
    t.Null(),
  ]),
})

export const WebhookCreateBody = t.Object({
  url: t.String({
    minLength: 1,
    maxLength: 2048,
    description: 'http(s) URL; private, loopback and link-local addresses are refused',
  }),
  secret: t.Optional(
    t.String({
      minLength: 16,
      maxLength: 256,
      description: 'HMAC-SHA256 signing key; generated when absent',
      error: 'secret must be 16-256 characters',
    }),
  ),
  events: t.Array(Event, {
    minItems: 1,
    maxItems: 2,
    description: 'Events to deliver',
    error: 'events must list image.uploaded and/or image.deleted',
  }),
})

export const WebhookCreatedResponse = t.Object({
  success: t.Literal(true),
  webhook: WebhookModel,
  secret: t.String({ description: 'The signing secret, shown this once' }),
})
export const WebhookListResponse = t.Object({ success: t.Literal(true), webhooks: t.Array(WebhookModel) })
export const WebhookIdParams = t.Object({ id: NumericId('Webhook id') })

export const WEBHOOKS_DESCRIPTION =
  `At most ${MAX_WEBHOOKS} per account. Each delivery is a JSON POST signed with \`X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the raw body>\`, ` +
  'with `X-Webhook-Event`, `X-Webhook-Delivery` (the same id on every retry), `X-Webhook-Timestamp` (Unix seconds); body ' +
  '`{ id, event, timestamp, image }`. Discord webhook URLs get a Discord embed instead. Non-2xx answers and network errors are ' +
  'retried after 1 s, 5 s, 30 s, 2 min and 10 min (queue in memory: pending retries are lost on restart). Redirects are not followed.'
