import { createHmac, randomUUID } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { Image } from '../../db/schema'
import { log } from '../../log'
import { checkedLookup, RefusedAddressError, resolvePublic } from '../../net/address'
import type { ImageEvents, ImageEventType } from '../images/events'
import { deliveryBody } from './payload'
import { findWebhook, recordDelivery, webhooksOf } from './repository'

const SIGNATURE_HEADER = 'X-Webhook-Signature'

export interface WebhookOptions {
  /** Waits before each retry; the number of retries is its length. Default 1 s, 5 s, 30 s, 2 min, 10 min. */
  retryDelaysMs?: number[]
  /** Time allowed for one delivery (connect, send, response headers). Default 10 s. */
  timeoutMs?: number
  /** Deliveries in flight at once. Default 4. */
  concurrency?: number
}

const DEFAULT_RETRY_DELAYS_MS = [1_000, 5_000, 30_000, 120_000, 600_000]
/** Deliveries waiting (queued or between retries) at most; beyond it new events are dropped, with a log line. */
const MAX_PENDING = 10_000

interface Job {
  webhookId: number
  deliveryId: string
  event: ImageEventType
  body: string
  /** 0 for the first try. */
  attempt: number
}

/** `sha256=<hex>`: HMAC-SHA256 of the raw body with the endpoint's secret. */
const signBody = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`

/** One POST; resolves with the status code. Redirects are answers like any other (never followed). */
async function post(
  target: string,
  body: string,
  headers: Record<string, string>,
  opts: {
    allowPrivate: boolean
    lookup: ReturnType<typeof checkedLookup>
    timeoutMs: number
    aborts: Set<AbortController>
  },
): Promise<number> {
  const { allowPrivate, lookup, timeoutMs, aborts } = opts
  const url = new URL(target)
  // IP literals skip the lookup hook: check them here.
  if (isIP(url.hostname.replace(/^\[|\]$/g, ''))) await resolvePublic(url.hostname, allowPrivate)
  const controller = new AbortController()
  aborts.add(controller)
  const timer = setTimeout(() => controller.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs)
  try {
    return await new Promise<number>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
          lookup,
          agent: false,
          signal: controller.signal,
        },
        (response) => {
          resolve(response.statusCode ?? 0)
          // The body is not needed; do not wait for it.
          response.destroy()
        },
      )
      request.on('error', (error) => reject(controller.signal.aborted ? (controller.signal.reason as Error) : error))
      request.end(body)
    })
  } finally {
    clearTimeout(timer)
    aborts.delete(controller)
  }
}

/**
 * The delivery of image events to an account's endpoints: signed, queued in memory (lost on restart), retried with
 * backoff, and never sent to a private address unless WEBHOOK_ALLOW_PRIVATE.
 */
export function createDeliveries(deps: { db: Db; config: Config; options?: WebhookOptions }) {
  const { db, config } = deps
  const allowPrivate = config.webhooks.allowPrivate
  const retryDelays = deps.options?.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS
  const timeoutMs = deps.options?.timeoutMs ?? 10_000
  const concurrency = deps.options?.concurrency ?? 4
  const payloadContext = {
    base: { publicUrl: config.site.publicUrl, cdnBase: config.site.cdnUrl },
    siteName: config.site.name,
    siteColor: config.site.color,
  }

  const ready: Job[] = []
  const timers = new Set<ReturnType<typeof setTimeout>>()
  const inFlight = new Set<Promise<void>>()
  const aborts = new Set<AbortController>()
  let active = 0
  let stopped = false

  const pendingCount = () => ready.length + timers.size + active

  /** The connection resolves the name once, through the checks (DNS rebinding cannot pass). */
  const lookup = checkedLookup(allowPrivate)

  async function attempt(job: Job) {
    const hook = await findWebhook(db, job.webhookId)
    if (!hook) return // deleted since: nothing to deliver to
    const headers = {
      'Content-Type': 'application/json',
      'User-Agent': `${config.site.name}-webhooks/1.0`,
      'X-Webhook-Event': job.event,
      'X-Webhook-Delivery': job.deliveryId,
      'X-Webhook-Timestamp': String(Math.floor(Date.now() / 1000)),
      'X-Webhook-Attempt': String(job.attempt + 1),
      [SIGNATURE_HEADER]: signBody(hook.secret, job.body),
    }
    let status = 0
    let error: string | null = null
    let permanent = false
    try {
      status = await post(hook.url, job.body, headers, { allowPrivate, lookup, timeoutMs, aborts })
      if (status < 200 || status > 299) error = `HTTP ${status}`
    } catch (e) {
      error = (e as Error)?.message ?? String(e)
      permanent = e instanceof RefusedAddressError
    }
    await recordDelivery(db, hook.id, status, error)
    if (!error) return
    if (!permanent && job.attempt < retryDelays.length && !stopped) {
      schedule({ ...job, attempt: job.attempt + 1 }, retryDelays[job.attempt])
    } else if (!stopped) {
      log.warn('webhook delivery failed', {
        webhook: hook.id,
        delivery: job.deliveryId,
        attempts: job.attempt + 1,
        error,
      })
    }
  }

  function pump() {
    while (!stopped && active < concurrency && ready.length > 0) {
      const job = ready.shift()!
      active++
      const delivery = attempt(job)
        .catch((error) => log.error('webhook delivery crashed', { error: String(error) }))
        .finally(() => {
          active--
          inFlight.delete(delivery)
          pump()
        })
      inFlight.add(delivery)
    }
  }

  function schedule(job: Job, delayMs: number) {
    const timer = setTimeout(() => {
      timers.delete(timer)
      ready.push(job)
      pump()
    }, delayMs)
    timer.unref?.()
    timers.add(timer)
  }

  async function enqueue(type: ImageEventType, image: Image) {
    if (stopped || image.userId === null) return
    const hooks = await webhooksOf(db, image.userId)
    if (stopped) return
    const at = Date.now()
    for (const hook of hooks) {
      if (!(JSON.parse(hook.events) as string[]).includes(type)) continue
      if (pendingCount() >= MAX_PENDING) {
        log.warn('webhook queue full; event dropped', { webhook: hook.id, event: type })
        continue
      }
      const deliveryId = randomUUID()
      ready.push({
        webhookId: hook.id,
        deliveryId,
        event: type,
        attempt: 0,
        body: deliveryBody(payloadContext, hook.url, { id: deliveryId, event: type, at }, image),
      })
    }
    pump()
  }

  /** The images feature's event hook: returns at once; the lookup and the deliveries happen after the answer. */
  const events: ImageEvents = {
    emit(type, image) {
      if (image.userId === null) return
      setImmediate(() => {
        enqueue(type, image).catch((error) => log.error('webhook enqueue failed', { error: String(error) }))
      })
    },
  }

  return {
    events,
    /** Deliveries queued, in flight or waiting for a retry. */
    pending: pendingCount,

    /** Stops delivering: retries waiting are dropped (the queue is in memory), requests in flight are aborted. */
    async stop() {
      stopped = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      ready.length = 0
      for (const controller of aborts) controller.abort(new Error('shutting down'))
      await Promise.allSettled([...inFlight])
    },
  }
}
