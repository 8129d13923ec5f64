/**
 * Every API answer carries `X-Content-Type-Options: nosniff` (issue 17), so a browser never reads a JSON body (which
 * may echo user text) as HTML or script: successes, errors of every kind, and the routes Bun answers ahead of the app.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeImage, uploadForm } from '../fixtures'
import { jsonBody, startTestServer, type TestServer, userWithKey } from '../helpers'

const TIMEOUT = 60_000
let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let id: string

beforeAll(async () => {
  t = await startTestServer({ GLOBAL_RATE_LIMIT: '40' })
  owner = await userWithKey(t)
  const up = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 16, 16), name: 'n.png' }]),
  })
  id = up.body.id
}, TIMEOUT)
afterAll(() => t?.stop(), TIMEOUT)

describe('nosniff on API answers', () => {
  test(
    'successes, errors, validation, unknown routes, fast routes, rate limiting',
    async () => {
      const answers: [string, Response][] = [
        [
          'upload 201',
          await t.fetch('/api/v1/upload', {
            method: 'POST',
            headers: owner.keyHeader,
            body: uploadForm([{ bytes: await makeImage('png', 16, 16, 1), name: 'm.png' }]),
          }),
        ],
        ['me 200', await t.fetch('/api/v1/me', { headers: owner.keyHeader })],
        ['metadata 200 (fast route)', await t.fetch(`/api/v1/image/${id}`)],
        ['metadata 404 (fast route)', await t.fetch('/api/v1/image/AAAAAAAA')],
        ['healthz', await t.fetch('/healthz')],
        ['401', await t.fetch('/api/v1/me')],
        ['400 validation', await t.fetch('/api/albums', { method: 'POST', ...jsonBody({ title: 7 }, owner.bearer) })],
        [
          '400 malformed JSON',
          await t.fetch('/api/auth/login', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{',
          }),
        ],
        ['404 unknown route', await t.fetch('/api/nothing-here')],
        ['cdn 404', await t.fetch('/cdn/AAAAAAAA.png')],
      ]
      let limited: Response | undefined
      for (let i = 0; i < 60 && !limited; i++) {
        const res = await t.fetch('/api/gallery')
        if (res.status === 429) limited = res
      }
      answers.push(['429', limited!])
      for (const [what, res] of answers) {
        expect(res, what).toBeDefined()
        expect(res.headers.get('x-content-type-options'), `${what} (${res.status})`).toBe('nosniff')
      }
    },
    TIMEOUT,
  )
})
