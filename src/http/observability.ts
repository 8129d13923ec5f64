import { Elysia } from 'elysia'
import { log } from '../log'
import type { Classifier } from '../moderation'

type Labels = Record<string, string>

const renderLabels = (labels: Labels) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
    .join(',')

/**
 * Rendered label strings by their raw values: escaping them on every increment cost ~2.5 us, the largest part of a
 * cached /cdn request (bench/README.md). As many entries as the counters have series.
 */
const renderedLabels = new Map<string, string>()
function labelKey(labels: Labels): string {
  let raw = ''
  for (const name in labels) raw += `${name}\u0000${labels[name]}\u0001`
  let key = renderedLabels.get(raw)
  if (key === undefined) {
    key = renderLabels(labels)
    renderedLabels.set(raw, key)
  }
  return key
}

class Counter {
  private values = new Map<string, number>()
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1) {
    const key = labelKey(labels)
    this.values.set(key, (this.values.get(key) ?? 0) + by)
  }
  render() {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`]
    if (this.values.size === 0) lines.push(`${this.name} 0`)
    for (const [key, value] of this.values) lines.push(`${this.name}${key ? `{${key}}` : ''} ${value}`)
    return lines.join('\n')
  }
}

class Histogram {
  /** Observations per bucket, each in its smallest one only: one increment per request, cumulated when rendered. */
  private counts: number[]
  private sum = 0
  private total = 0
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: number[],
  ) {
    this.counts = buckets.map(() => 0)
  }
  observe(value: number) {
    this.sum += value
    this.total++
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]) {
        this.counts[i]++
        return
      }
    }
  }
  render() {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`]
    let cumulative = 0
    for (const [i, b] of this.buckets.entries()) {
      cumulative += this.counts[i]
      lines.push(`${this.name}_bucket{le="${b}"} ${cumulative}`)
    }
    lines.push(
      `${this.name}_bucket{le="+Inf"} ${this.total}`,
      `${this.name}_sum ${this.sum}`,
      `${this.name}_count ${this.total}`,
    )
    return lines.join('\n')
  }
}

const gauge = (name: string, help: string, value: number) =>
  `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name} ${value}`

export type Metrics = ReturnType<typeof createMetrics>

/** The service's Prometheus metrics, kept in memory. */
export function createMetrics() {
  const requests = new Counter('http_requests_total', 'HTTP requests by route, method and status')
  const duration = new Histogram(
    'http_request_duration_seconds',
    'HTTP request duration',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  )
  const uploads = new Counter('uploads_total', 'Images stored')
  const uploadBytes = new Counter('upload_bytes_total', 'Bytes of stored originals')
  const scans = new Histogram(
    'nsfw_scan_duration_seconds',
    'Classification latency',
    [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
  )
  const scanFailures = new Counter('nsfw_scan_failures_total', 'Scans that failed or timed out')
  return {
    request(labels: { route: string; method: string; status: string }, seconds: number) {
      requests.inc(labels)
      duration.observe(seconds)
    },
    uploaded(count: number, bytes: number) {
      uploads.inc({}, count)
      uploadBytes.inc({}, bytes)
    },
    /** Wraps a classifier so every scan's latency and failure is recorded. */
    instrument(classifier: Classifier): Classifier {
      return {
        async classify(rgb) {
          const start = performance.now()
          try {
            return await classifier.classify(rgb)
          } catch (error) {
            scanFailures.inc()
            throw error
          } finally {
            scans.observe((performance.now() - start) / 1000)
          }
        },
        warm: () => classifier.warm(),
        close: () => classifier.close(),
        get queueDepth() {
          return classifier.queueDepth
        },
      }
    },
    render(gauges: { storageUsedBytes: number; queueDepth: number }) {
      return `${[
        requests.render(),
        duration.render(),
        uploads.render(),
        uploadBytes.render(),
        scans.render(),
        scanFailures.render(),
        gauge('storage_used_bytes', 'Bytes of all stored originals', gauges.storageUsedBytes),
        gauge('nsfw_queue_depth', 'Scans waiting or running', gauges.queueDepth),
      ].join('\n')}\n`
    },
  }
}

/** Statuses whose answers have no body (RFC 9110): what Bun sends for them is headers only. */
const BODILESS = new Set([204, 205, 304])

/**
 * The bytes of an answer's body as they go out, after any compression (headers not counted): none for HEAD and the
 * statuses without a body; else the Content-Length the answer states (compressed pages, files, ranges); else measured
 * on a copy. Bun works out the length of a string, bytes or file body only as it sends it, and shows it nowhere:
 * serialised JSON, plain text, error answers. A copy shares the body's bytes, so only a stream of unstated length
 * would cost its size in memory, and no answer of the app is one.
 * Called before the answer is handed to Bun, which then consumes the body.
 */
export function sentBytes(request: Request, response: Response): number | Promise<number> {
  if (request.method === 'HEAD' || response.status < 200 || BODILESS.has(response.status)) return 0
  const length = response.headers.get('content-length')
  if (length !== null) return Number(length)
  return response
    .clone()
    .blob()
    .then(
      (body) => body.size,
      () => 0,
    )
}

/** An answered request, as the metrics and the log line describe it. */
export interface AnsweredRequest {
  method: string
  route: string
  status: number
  durationMs: number
  /** The body's bytes as sent (sentBytes), only asked when the log is on: measuring can cost more than a cheap request. */
  bytes: () => number | Promise<number>
}

/**
 * Counts a request in the metrics and, with the log on, writes its one line (no query strings, headers or bodies:
 * they can hold secrets). Used by `requestLog` and by the routes that answer ahead of the app's hooks (/cdn).
 */
export function recordRequest(metrics: Metrics, logging: boolean, r: AnsweredRequest) {
  metrics.request({ route: r.route, method: r.method, status: String(r.status) }, r.durationMs / 1000)
  if (!logging) return
  const write = (bytes: number) =>
    log.info('request', {
      method: r.method,
      route: r.route,
      status: r.status,
      durationMs: Math.round(r.durationMs * 100) / 100,
      bytes,
    })
  const bytes = r.bytes()
  if (typeof bytes === 'number') write(bytes)
  else void bytes.then(write)
}

/** What the app handed Bun for a request: its status and its body's bytes (sentBytes; 0 with the log off). */
interface Sent {
  status: number
  bytes: number | Promise<number>
}

/**
 * Records every request that goes through the app (see recordRequest), as it was answered: the status and body of the
 * Response handed to Bun, after every hook (the error model, compression), not the handler's value.
 */
export function requestLog(metrics: Metrics, opts: { log: boolean }) {
  const started = new WeakMap<Request, number>()
  const answers = new WeakMap<Request, Sent | Promise<Sent | undefined>>()
  const sent = (request: Request, response: Response): Sent => ({
    status: response.status,
    bytes: opts.log ? sentBytes(request, response) : 0,
  })
  return (
    new Elysia({ name: 'request-log' })
      // Around the app's whole handler (Elysia.wrap), so it sees the final Response and measures it before Bun sends
      // it. An answer still to come is measured in the promise Bun waits for, so still before it is sent.
      .wrap((handle) => (request: Request) => {
        // Typed by Elysia as any function's result: the app's handler answers a Response, now or later.
        const answer = handle(request) as unknown as Response | Promise<Response>
        if (answer instanceof Response) {
          answers.set(request, sent(request, answer))
          return answer
        }
        const { promise, resolve } = Promise.withResolvers<Sent | undefined>()
        answers.set(request, promise)
        return answer.then(
          (response) => {
            resolve(sent(request, response))
            return response
          },
          (error) => {
            resolve(undefined)
            throw error
          },
        )
      })
      .onRequest(({ request }) => {
        started.set(request, performance.now())
      })
      .onAfterResponse({ as: 'global' }, async ({ request, set, route }) => {
        const start = started.get(request)
        const durationMs = start === undefined ? 0 : performance.now() - start
        const answer = await answers.get(request)
        recordRequest(metrics, opts.log, {
          method: request.method,
          route: route || 'unmatched',
          // Without an answer (the handler failed past Elysia's own error handling): what the hooks had set.
          status: answer?.status ?? (Number(set.status) || 500),
          durationMs,
          bytes: () => answer?.bytes ?? 0,
        })
      })
  )
}
