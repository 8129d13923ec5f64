import { afterAll, describe, expect, spyOn, test } from 'bun:test'
import { HttpError, jsonResponse } from '../../src/http/errors'
import { fastRoute } from '../../src/http/fast-route'
import { createMetrics } from '../../src/http/observability'

// The wrapper of the routes Bun answers ahead of the app (/cdn, image metadata), on a real server: it must answer
// failures as the error model does and record every request as the request log does.

const metrics = createMetrics()
const observe = { metrics, log: true }
const route = (path: string, handler: Parameters<typeof fastRoute>[2]) => ({
  [path]: { GET: fastRoute(observe, path, handler) },
})

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  routes: {
    ...route('/ok/:name', (request) => jsonResponse({ hello: request.params.name })),
    ...route('/later', async () => jsonResponse({ later: true }, 201)),
    ...route('/teapot', () => {
      throw new HttpError(418, 'short and stout', { hint: 'tip me over' }, { 'x-extra': 'yes' })
    }),
    ...route('/boom', () => {
      throw new Error('database exploded at /work/main/src/secret/path.ts:12')
    }),
    ...route('/rejects', async () => {
      throw new Error('async failure in /work/main/src/secret.ts')
    }),
  },
  fetch: () => new Response('unrouted', { status: 599 }),
})
afterAll(() => server.stop(true))

const get = (path: string) => fetch(`http://127.0.0.1:${server.port}${path}`)

/** Runs `act` with console.log and console.error captured; returns the JSON lines of each. */
async function captured(act: () => Promise<void>) {
  const out: string[] = []
  const err: string[] = []
  const log = spyOn(console, 'log').mockImplementation((line: unknown) => void out.push(String(line)))
  const error = spyOn(console, 'error').mockImplementation((line: unknown) => void err.push(String(line)))
  try {
    await act()
  } finally {
    log.mockRestore()
    error.mockRestore()
  }
  return { logged: out.map((l) => JSON.parse(l)), errors: err }
}

describe('fastRoute', () => {
  test('answers with the handler, sync or async, path parameters included', async () => {
    const res = await get('/ok/world')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await res.json()).toEqual({ hello: 'world' })
    const later = await get('/later')
    expect(later.status).toBe(201)
    expect(await later.json()).toEqual({ later: true })
  })

  test('an HttpError is answered as the error model answers it: status, message, extra fields, headers', async () => {
    const res = await get('/teapot')
    expect(res.status).toBe(418)
    expect(res.headers.get('x-extra')).toBe('yes')
    expect(await res.json()).toEqual({ error: 'short and stout', hint: 'tip me over' })
  })

  test('anything else, thrown or rejected: 500 that names nothing, logged for the operator', async () => {
    for (const path of ['/boom', '/rejects']) {
      let text = ''
      const { errors } = await captured(async () => {
        const res = await get(path)
        expect(res.status).toBe(500)
        text = await res.text()
      })
      expect(JSON.parse(text)).toEqual({ error: 'Internal server error' })
      expect(text).not.toContain('/work/')
      expect(errors.join('\n')).toContain('/work/main/src/secret')
    }
  })

  test('every request is counted in the metrics and logged with its route, status and size', async () => {
    const { logged } = await captured(async () => {
      await (await get('/ok/sizes')).arrayBuffer()
      await (await get('/teapot')).arrayBuffer()
    })
    const lines = logged.filter((l) => l.msg === 'request')
    expect(lines.map((l) => [l.method, l.route, l.status])).toEqual([
      ['GET', '/ok/:name', 200],
      ['GET', '/teapot', 418],
    ])
    expect(lines[0].bytes).toBe(JSON.stringify({ hello: 'sizes' }).length)
    expect(lines[1].bytes).toBe(JSON.stringify({ error: 'short and stout', hint: 'tip me over' }).length)
    const text = metrics.render({ storageUsedBytes: 0, queueDepth: 0 })
    expect(text).toMatch(/http_requests_total\{route="\/ok\/:name",method="GET",status="200"\} [1-9]/)
    expect(text).toMatch(/http_requests_total\{route="\/teapot",method="GET",status="418"\} [1-9]/)
  })
})
