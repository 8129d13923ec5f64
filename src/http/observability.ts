import { Elysia } from 'elysia'
import { log } from '../log'
import type { Classifier } from '../moderation'
import { errorAnswers } from './errors'

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

/** Size of a response body: files and explicit responses say it; values Elysia serialises are measured. */
function bodyBytes(value: unknown): number {
  if (value instanceof Response) return Number(value.headers.get('content-length') ?? 0)
  if (value === undefined || value === null) return 0
  if (value instanceof Blob) return value.size
  return Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value))
}

/** An answered request, as the metrics and the log line describe it. */
export interface AnsweredRequest {
  method: string
  route: string
  status: number
  durationMs: number
  /** Only read when the log is on: measuring a body can cost more than the rest of a cheap request. */
  bytes: () => number
}

/**
 * Counts a request in the metrics and, with the log on, writes its one JSON line (no query strings, headers or
 * bodies: they can hold secrets). Used by `requestLog` and by the routes that answer ahead of the app's hooks (/cdn).
 */
export function recordRequest(metrics: Metrics, logging: boolean, r: AnsweredRequest) {
  metrics.request({ route: r.route, method: r.method, status: String(r.status) }, r.durationMs / 1000)
  if (logging) {
    log.info('request', {
      method: r.method,
      route: r.route,
      status: r.status,
      durationMs: Math.round(r.durationMs * 100) / 100,
      bytes: r.bytes(),
    })
  }
}

/** Records every request that goes through the app (see recordRequest). */
export function requestLog(metrics: Metrics, opts: { log: boolean }) {
  const started = new WeakMap<Request, number>()
  return new Elysia({ name: 'request-log' })
    .onRequest(({ request }) => {
      started.set(request, performance.now())
    })
    .onAfterResponse({ as: 'global' }, (ctx) => {
      const { request, set, route } = ctx
      const start = started.get(request)
      const response = ctx.responseValue ?? errorAnswers.get(request)
      const status =
        response instanceof Response
          ? response.status
          : typeof set.status === 'number'
            ? set.status
            : Number(set.status) || 200
      recordRequest(metrics, opts.log, {
        method: request.method,
        route: route || 'unmatched',
        status,
        durationMs: start === undefined ? 0 : performance.now() - start,
        bytes: () => bodyBytes(response),
      })
    })
}
