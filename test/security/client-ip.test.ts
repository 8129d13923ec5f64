import { afterEach, describe, expect, test } from 'bun:test'
import { images } from '../../src/db/schema'
import { makeImage, uploadForm } from '../fixtures'
import type { TestServer } from '../helpers'
import { startServer } from './support'

let servers: TestServer[] = []
async function fresh(env: Record<string, string>) {
  const t = await startServer(env)
  servers.push(t)
  return t
}
afterEach(async () => {
  await Promise.all(servers.map((t) => t.stop()))
  servers = []
})

let seed = 1
const anonUpload = async (t: TestServer, headers: Record<string, string>) =>
  t.fetch('/api/upload', {
    method: 'POST',
    headers,
    body: uploadForm([{ bytes: await makeImage('png', 8, 8, seed++) }]),
  })

/** Every header a client could use to claim another address. */
const forged = (i: number): Record<string, string> => ({
  'x-forwarded-for': `198.51.100.${i}`,
  'x-real-ip': `198.51.100.${i}`,
  forwarded: `for=198.51.100.${i}`,
  'cf-connecting-ip': `198.51.100.${i}`,
  'true-client-ip': `198.51.100.${i}`,
})

const uploaderIps = async (t: TestServer) =>
  (await t.server.db.selectDistinct({ ip: images.uploaderIp }).from(images)).map((r) => r.ip)

describe('without TRUST_PROXY the client IP is the socket peer', () => {
  test('a forged X-Forwarded-For (or any such header) does not dodge the anonymous upload limit', async () => {
    const t = await fresh({ ANON_UPLOADS_PER_WINDOW: '2' })
    expect((await anonUpload(t, forged(1))).status).toBe(201)
    expect((await anonUpload(t, forged(2))).status).toBe(201)
    expect((await anonUpload(t, forged(3))).status).toBe(429)
    expect((await anonUpload(t, {})).status).toBe(429)
    // What is recorded is the real peer, never the claimed address.
    const ips = await uploaderIps(t)
    expect(ips).toHaveLength(1)
    expect(ips[0]).toMatch(/^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/)
  })

  test('a forged X-Forwarded-For does not dodge the global limit', async () => {
    const t = await fresh({ GLOBAL_RATE_LIMIT: '5' })
    for (let i = 0; i < 5; i++) expect((await t.fetch('/api/gallery', { headers: forged(i) })).status).toBe(200)
    for (let i = 5; i < 8; i++) expect((await t.fetch('/api/gallery', { headers: forged(i) })).status).toBe(429)
  })
})

describe('with TRUST_PROXY the client IP is the last X-Forwarded-For address (the one the proxy appended)', () => {
  test('anonymous windows follow the proxy-appended address; what the client put in front is ignored', async () => {
    const t = await fresh({ TRUST_PROXY: 'true', ANON_UPLOADS_PER_WINDOW: '2' })
    const via = (client: string, claimed: string) => ({ 'x-forwarded-for': `${claimed}, ${client}` })
    expect((await anonUpload(t, via('203.0.113.1', '1.1.1.1'))).status).toBe(201)
    expect((await anonUpload(t, via('203.0.113.1', '2.2.2.2'))).status).toBe(201)
    // The client changes what it claims, but the proxy still appends its real address: refused.
    expect((await anonUpload(t, via('203.0.113.1', '3.3.3.3'))).status).toBe(429)
    // Another client behind the same proxy has its own window.
    expect((await anonUpload(t, via('203.0.113.2', '203.0.113.1'))).status).toBe(201)
    expect((await uploaderIps(t)).sort()).toEqual(['203.0.113.1', '203.0.113.2'])
  })

  test('the global limit follows the proxy-appended address', async () => {
    const t = await fresh({ TRUST_PROXY: '1', GLOBAL_RATE_LIMIT: '5' })
    const from = (ip: string) => ({ 'x-forwarded-for': `10.9.9.9, ${ip}` })
    for (let i = 0; i < 5; i++)
      expect((await t.fetch('/api/gallery', { headers: from('203.0.113.7') })).status).toBe(200)
    expect((await t.fetch('/api/gallery', { headers: from('203.0.113.7') })).status).toBe(429)
    expect((await t.fetch('/api/gallery', { headers: { 'x-forwarded-for': '203.0.113.7, 203.0.113.8' } })).status).toBe(
      200,
    )
    // Without the header (a request that did not come through the proxy) the socket peer counts.
    for (let i = 0; i < 5; i++) expect((await t.fetch('/api/gallery')).status).toBe(200)
    expect((await t.fetch('/api/gallery')).status).toBe(429)
  })
})
