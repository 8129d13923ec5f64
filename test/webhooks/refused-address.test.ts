/**
 * A refused webhook target says "not allowed" and never names the address its host resolved to (issue 17: the error
 * for `http://localhost/` named the private address, telling a caller what internal names resolve to).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { jsonBody, registerUser, startTestServer, type TestServer } from '../helpers'

const TIMEOUT = 60_000
let t: TestServer
let account: Awaited<ReturnType<typeof registerUser>>

beforeAll(async () => {
  t = await startTestServer()
  account = await registerUser(t)
}, TIMEOUT)
afterAll(() => t?.stop(), TIMEOUT)

describe('webhook SSRF refusals', () => {
  test(
    'a name resolving to a private address: 400 "not allowed", without the address',
    async () => {
      const res = await t.json('/api/webhooks', {
        method: 'POST',
        ...jsonBody({ url: 'http://localhost/hook', events: ['image.uploaded'] }, account.bearer),
      })
      expect(res.status).toBe(400)
      expect(res.body.error).toContain('localhost is not allowed')
      for (const address of ['127.0.0.1', '::1', '127.']) expect(res.body.error).not.toContain(address)
    },
    TIMEOUT,
  )

  test(
    'a private literal is refused the same way (naming only what the caller sent)',
    async () => {
      const res = await t.json('/api/webhooks', {
        method: 'POST',
        ...jsonBody({ url: 'http://10.1.2.3/hook', events: ['image.uploaded'] }, account.bearer),
      })
      expect(res.status).toBe(400)
      expect(res.body.error).toContain('10.1.2.3 is not allowed')
    },
    TIMEOUT,
  )
})
