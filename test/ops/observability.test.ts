import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, userWithKey, type TestServer } from '../helpers'

const TOKEN = 'metrics-token-for-tests'
let t: TestServer
let logs: string[] = []

beforeAll(async () => {
  t = await startTestServer({ METRICS_TOKEN: TOKEN, LOG_REQUESTS: 'true' })
})
afterAll(() => t.stop())

/** Parses Prometheus text format into samples; throws on any line that is not a comment or a sample. */
function parsePrometheus(text: string) {
  const samples: { name: string; labels: Record<string, string>; value: number }[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+]+|NaN|\+Inf)$/.exec(line)
    if (!match) throw new Error(`not Prometheus text: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? '').match(/[a-zA-Z_]+="(?:[^"\\]|\\.)*"/g) ?? []) {
      const eq = pair.indexOf('=')
      labels[pair.slice(0, eq)] = JSON.parse(pair.slice(eq + 1))
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) })
  }
  return samples
}

describe('metrics', () => {
  test('need the token', async () => {
    expect((await t.fetch('/metrics')).status).toBe(401)
    expect((await t.fetch('/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401)
  })
  test('are valid Prometheus text with requests, uploads, storage and queue depth', async () => {
    const user = await userWithKey(t)
    const upload = await t.json('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: uploadForm([{ bytes: await makeImage('png') }]) })
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
    expect(samples.some((s) => s.name === 'nsfw_scan_duration_seconds_count')).toBe(true)
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
    try {
      const user = await userWithKey(t)
      await t.fetch(`/api/v1/images?page=1&secret=${user.apiKey}`, { headers: user.keyHeader })
      await t.fetch('/api/v1/image/AAAAAAAA')
      await Bun.sleep(20)
    } finally {
      spy.mockRestore()
    }
    const entries = logs.map((l) => JSON.parse(l)).filter((e) => e.msg === 'request')
    const list = entries.find((e) => e.route === '/api/v1/images')
    expect(list).toMatchObject({ level: 'info', method: 'GET', status: 200 })
    expect(typeof list.durationMs).toBe('number')
    expect(typeof list.bytes).toBe('number')
    expect(entries.find((e) => e.route === '/api/v1/image/:id')).toMatchObject({ status: 404 })
    expect(logs.join('\n')).not.toContain('ihk_')
  })
})
