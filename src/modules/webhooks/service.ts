import type { Config } from '../../config'
import { type Db, run, transaction } from '../../db/client'
import type { User, Webhook } from '../../db/schema'
import { badRequest, notFound } from '../../errors'
import { randomAlphanumeric } from '../../lib/crypto'
import { iso } from '../../lib/time'
import { parseHttpUrl, RefusedAddressError, resolvePublic } from '../../net/address'
import { IMAGE_EVENTS, type ImageEventType } from '../images/events'
import { createDeliveries, type WebhookOptions } from './deliver'
import { MAX_WEBHOOKS } from './model'
import { isDiscordUrl } from './payload'
import { countWebhooks, deleteWebhook, insertWebhook, webhooksOf } from './repository'

export type { WebhookOptions } from './deliver'

export type WebhookService = ReturnType<typeof createWebhookService>

function view(hook: Webhook) {
  return {
    id: hook.id,
    url: hook.url,
    events: JSON.parse(hook.events) as ImageEventType[],
    discord: isDiscordUrl(hook.url),
    createdAt: iso(hook.createdAt),
    lastDelivery: hook.lastDeliveryAt
      ? { at: iso(hook.lastDeliveryAt), status: hook.lastStatus, error: hook.lastError }
      : null,
  }
}

/**
 * Per-account webhooks: endpoints, and the delivery of image events to them. Deliveries are signed, queued in
 * memory (lost on restart), retried with backoff, and never reach a private address unless WEBHOOK_ALLOW_PRIVATE.
 */
export function createWebhookService(deps: { db: Db; config: Config; options?: WebhookOptions }) {
  const { db, config } = deps
  const allowPrivate = config.webhooks.allowPrivate
  const deliveries = createDeliveries(deps)

  async function checkUrl(raw: string): Promise<URL> {
    let url: URL
    try {
      url = parseHttpUrl(raw)
    } catch (error) {
      throw badRequest(`url ${(error as Error).message}`)
    }
    // With private targets allowed there is nothing to check (and a name that does not resolve yet may later).
    if (allowPrivate) return url
    try {
      await resolvePublic(url.hostname, allowPrivate)
    } catch (error) {
      if (error instanceof RefusedAddressError) throw badRequest(`url refused: ${error.message}`)
      throw error
    }
    return url
  }

  return {
    events: deliveries.events,

    async list(user: User) {
      const rows = await webhooksOf(db, user.id)
      return { success: true as const, webhooks: rows.map(view) }
    },

    /** Creates an endpoint; the secret (given, or generated) is returned here only. */
    async create(user: User, input: { url: string; secret?: string; events: string[] }) {
      const events = [...new Set(input.events)]
      if (events.length === 0 || events.some((e) => !IMAGE_EVENTS.includes(e as ImageEventType))) {
        throw badRequest(`events must list one or more of: ${IMAGE_EVENTS.join(', ')}`)
      }
      if ((await run(countWebhooks(db, user.id))) >= MAX_WEBHOOKS)
        throw badRequest(`At most ${MAX_WEBHOOKS} webhooks per account`)
      const url = await checkUrl(input.url.trim())
      const secret = input.secret ?? `whsec_${randomAlphanumeric(40)}`
      // Checked again with the insert, in one transaction writers take in turn, so parallel creations cannot pass
      // the limit.
      const row = await transaction(db, function* (tx) {
        if ((yield* countWebhooks(tx, user.id)) >= MAX_WEBHOOKS) {
          throw badRequest(`At most ${MAX_WEBHOOKS} webhooks per account`)
        }
        return yield* insertWebhook(tx, { userId: user.id, url: url.href, secret, events: JSON.stringify(events) })
      })
      return { success: true as const, webhook: view(row), secret }
    },

    async remove(user: User, id: number) {
      if (!(await deleteWebhook(db, id, user.id))) throw notFound('Webhook not found')
      return { success: true as const }
    },

    /** Deliveries queued, in flight or waiting for a retry. */
    pending: deliveries.pending,

    /** Stops delivering: retries waiting are dropped (the queue is in memory), requests in flight are aborted. */
    stop: deliveries.stop,
  }
}
