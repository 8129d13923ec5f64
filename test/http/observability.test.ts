import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { makeImage, uploadForm } from '../fixtures'
import { eventually, startTestServer, type TestServer, userWithKey } from '../helpers'

const TOKEN = 'metrics-token-for-tests'
let t: TestServer
const logs: string[] = []

beforeAll(async () => {
  // SCAN_API_UPLOADS: the upload below is classified too, so the scan histogram has an observation.
  t = await startTestServer({ METRICS_TOKEN: TOKEN, LOG_REQUESTS: 'true', SCAN_API_UPLOADS: 'true' })
})
afterAll(() => t.stop())

type Sample = { name: string; labels: Record<string, string>; value: number }

/** A Prometheus float: `+Inf` and `-Inf` are spelled out (JavaScript's Number() reads them as NaN). */
const float = (text: string) => (/^[+-]Inf$/i.test(text) ? (text.startsWith('-') ? -Infinity : Infinity) : Number(text))

/** Parses Prometheus text format into samples; throws on any line that is not a comment or a sample. */
function parsePrometheus(text: string) {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue
    const match =
      /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|NaN|[+-]Inf)$/i.exec(line)
    if (!match) throw new Error(`not Prometheus text: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? '').match(/[a-zA-Z_]+="(?:[^"\\]|\\.)*"/g) ?? []) {
      const eq = pair.indexOf('=')
      labels[pair.slice(0, eq)] = JSON.parse(pair.slice(eq + 1))
    }
    samples.push({ name: match[1], labels, value: float(match[3]) })
  }
  return samples
}

/**
 * A histogram's samples, checked against the format: `_bucket` lines with strictly increasing `le` ending in `+Inf`,
 * cumulative (non-decreasing) counts, the `+Inf` bucket equal to `_count`, and a `_sum`.
 */
function histogram(samples: Sample[], name: string) {
  const lines = samples.filter((s) => s.name === `${name}_bucket`)
  expect(lines.length).toBeGreaterThanOrEqual(2)
  expect(lines.at(-1)!.labels.le).toBe('+Inf')
  const buckets = lines.map((s) => ({ le: float(s.labels.le), count: s.value }))
  for (let i = 1; i < buckets.length; i++) {
    expect(buckets[i].le).toBeGreaterThan(buckets[i - 1].le)
    expect(buckets[i].count).toBeGreaterThanOrEqual(buckets[i - 1].count)
  }
  const count = samples.filter((s) => s.name === `${name}_count`)
  const sum = samples.filter((s) => s.name === `${name}_sum`)
  expect(count).toHaveLength(1)
  expect(sum).toHaveLength(1)
  expect(buckets.at(-1)!.count).toBe(count[0].value)
  return { buckets, count: count[0].value, sum: sum[0].value }
}

describe('metrics', () => {
  test('need the token', async () => {
    expect((await t.fetch('/metrics')).status).toBe(401)
    expect((await t.fetch('/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401)
  })
  test('are valid Prometheus text with requests, uploads, storage and queue depth', async () => {
    const user = await userWithKey(t)
    const upload = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png') }]),
    })
    const res = await t.fetch('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/plain')
    const samples = parsePrometheus(await res.text())
    const value = (name: string, labels: Record<string, string> = {}) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value
    expect(value('uploads_total')).toBe(1)
    expect(value('upload_bytes_total')).toBe(upload.body.size)
    expect(value('storage_used_bytes')).toBe(upload.body.size)
    expect(value('http_requests_total', { route: '/api/v1/upload', method: 'POST', status: '201' })).toBe(1)
    expect(value('nsfw_queue_depth')).toBe(0)

    // One scan (the upload's): its latency is the sum, and exactly the buckets at or above it count it.
    const scans = histogram(samples, 'nsfw_scan_duration_seconds')
    expect(scans.count).toBe(1)
    expect(scans.sum).toBeGreaterThan(0)
    for (const bucket of scans.buckets) expect(bucket.count, `le=${bucket.le}`).toBe(scans.sum <= bucket.le ? 1 : 0)
    expect(value('nsfw_scan_failures_total')).toBe(0)

    // Every request counted by route and status is also one observation of the duration histogram.
    const requests = samples.filter((s) => s.name === 'http_requests_total').reduce((total, s) => total + s.value, 0)
    const durations = histogram(samples, 'http_request_duration_seconds')
    expect(requests).toBeGreaterThanOrEqual(3)
    expect(durations.count).toBe(requests)
    expect(durations.sum).toBeGreaterThan(0)
  })
  test('are off (404) without a token', async () => {
    const off = await startTestServer()
    try {
      expect((await off.fetch('/metrics')).status).toBe(404)
    } finally {
      await off.stop()
    }
  })
})

describe('request log', () => {
  test('one JSON line per request with method, route, status, duration and bytes, and no secrets', async () => {
    const spy = spyOn(console, 'log').mockImplementation((line: unknown) => void logs.push(String(line)))
    let listBytes = 0
    let missingBytes = 0
    try {
      const user = await userWithKey(t)
      listBytes = (
        await (await t.fetch(`/api/v1/images?page=1&secret=${user.apiKey}`, { headers: user.keyHeader })).arrayBuffer()
      ).byteLength
      missingBytes = (await (await t.fetch('/api/v1/image/AAAAAAAA')).arrayBuffer()).byteLength
      const logged = (route: string) => logs.some((l) => l.includes(`"route":"${route}"`))
      await eventually(() => logged('/api/v1/images') && logged('/api/v1/image/:id'), undefined, 'the two log lines')
    } finally {
      spy.mockRestore()
    }
    const entries = logs.map((l) => JSON.parse(l)).filter((e) => e.msg === 'request')
    const list = entries.find((e) => e.route === '/api/v1/images')
    expect(list).toMatchObject({ level: 'info', method: 'GET', status: 200 })
    expect(typeof list.durationMs).toBe('number')
    // The size of what was sent, for answers and for errors alike.
    expect(list.bytes).toBe(listBytes)
    expect(missingBytes).toBeGreaterThan(0)
    expect(entries.find((e) => e.route === '/api/v1/image/:id')).toMatchObject({ status: 404, bytes: missingBytes })
    expect(logs.join('\n')).not.toContain('ihk_')
  })
})

describe('request log bytes', () => {
  /** A request whose body is kept as it came over the wire (fetch would otherwise decode a compressed one). */
  async function sent(path: string, init: RequestInit = {}) {
    const res = await fetch(t.url + path, { ...init, decompress: false } as RequestInit)
    return {
      status: res.status,
      encoding: res.headers.get('content-encoding'),
      bytes: (await res.arrayBuffer()).byteLength,
    }
  }

  test('count what went out: pages compressed or not, text, errors, files; none for HEAD and 304', async () => {
    const user = await userWithKey(t)
    const image = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png') }]),
    })
    const cdn = `/cdn/${image.body.id}.png`
    const spy = spyOn(console, 'log').mockImplementation((line: unknown) => void logs.push(String(line)))
    const answers: Record<string, Awaited<ReturnType<typeof sent>>> = {}
    try {
      logs.length = 0
      // One request a route or method, so each line is found by its route and method.
      answers.gzip = await sent('/gallery', { headers: { 'accept-encoding': 'gzip' } })
      answers.identity = await sent('/', { headers: { 'accept-encoding': 'identity' } })
      answers.head = await sent('/gallery', { method: 'HEAD' })
      answers.missingPage = await sent('/i/AAAAAAAA', { headers: { 'accept-encoding': 'br' } })
      answers.robots = await sent('/robots.txt')
      answers.file = await sent(cdn)
      answers.fileHead = await sent(cdn, { method: 'HEAD' })
      answers.notModified = await sent(`/cdn/medium/${image.body.id}.webp`, { headers: { 'if-none-match': '*' } })
      answers.unmatched = await sent('/no/such/path')
      // Each line is written once its answer is sent: the last request's is waited for by name.
      const wanted = ['/gallery', '/', '/i/:id', '/robots.txt', '/cdn/:file', '/cdn/medium/:file', 'unmatched']
      await eventually(
        () => wanted.every((route) => logs.some((l) => l.includes(`"route":"${route}"`))),
        undefined,
        'the lines of every route asked',
      )
    } finally {
      spy.mockRestore()
    }
    const entries = logs.map((l) => JSON.parse(l)).filter((e) => e.msg === 'request')
    const line = (route: string, method = 'GET') => entries.find((e) => e.route === route && e.method === method)
    // The page went out compressed: the line counts the compressed bytes, which are fewer than the page's.
    expect(answers.gzip.encoding).toBe('gzip')
    expect(line('/gallery')).toMatchObject({ status: 200, bytes: answers.gzip.bytes })
    expect(answers.gzip.bytes).toBeGreaterThan(100)
    expect(answers.identity.encoding).toBeNull()
    expect(line('/')).toMatchObject({ status: 200, bytes: answers.identity.bytes })
    expect(answers.identity.bytes).toBeGreaterThan(answers.gzip.bytes)
    expect(answers.head.bytes).toBe(0)
    expect(line('/gallery', 'HEAD')).toMatchObject({ status: 200, bytes: 0 })
    expect(answers.missingPage).toMatchObject({ status: 404, encoding: 'br' })
    expect(line('/i/:id')).toMatchObject({ status: 404, bytes: answers.missingPage.bytes })
    expect(line('/robots.txt')).toMatchObject({ status: 200, bytes: answers.robots.bytes })
    expect(answers.robots.bytes).toBeGreaterThan(0)
    expect(answers.file.bytes).toBe(image.body.size)
    expect(line('/cdn/:file')).toMatchObject({ status: 200, bytes: image.body.size })
    expect(line('/cdn/:file', 'HEAD')).toMatchObject({ status: 200, bytes: 0 })
    expect(answers.notModified).toMatchObject({ status: 304, bytes: 0 })
    expect(line('/cdn/medium/:file')).toMatchObject({ status: 304, bytes: 0 })
    expect(line('unmatched')).toMatchObject({ status: 404, bytes: answers.unmatched.bytes })
  })
})
