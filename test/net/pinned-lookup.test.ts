/**
 * What makes DNS rebinding fail: node:http(s) `request` under Bun honours the `lookup` option, so a connection goes to
 * the addresses pinnedLookup gives (those the checks looked at), while https keeps SNI and the certificate check on the
 * URL's host name. The names used here (`*.test`, `*.invalid`) resolve nowhere: only the pinned lookup can connect them.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import http, { type IncomingMessage } from 'node:http'
import https from 'node:https'
import { join } from 'node:path'
import { pinnedLookup } from '../../src/net/address'

// A self-signed certificate for pinned.test only (test/net/fixtures, valid until 2126).
const cert = readFileSync(join(import.meta.dir, 'fixtures/pinned-test.crt'), 'utf8')
const key = readFileSync(join(import.meta.dir, 'fixtures/pinned-test.key'), 'utf8')
const answer = (request: Request) => new Response(`host=${request.headers.get('host')}`)
let plain: ReturnType<typeof Bun.serve>
let secure: ReturnType<typeof Bun.serve>

beforeAll(() => {
  plain = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: answer })
  secure = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert, key }, fetch: answer })
})
afterAll(() => {
  plain.stop(true)
  secure.stop(true)
})

const loopback = pinnedLookup([{ address: '127.0.0.1', family: 4 }])

function get(url: string, options: https.RequestOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = (url.startsWith('https:') ? https : http).request(url, options, (response: IncomingMessage) => {
      let body = ''
      response.on('data', (chunk) => (body += chunk))
      response.on('end', () => resolve(body))
    })
    request.on('error', reject)
    request.end()
  })
}

test('http: the pinned address is where the request goes, with the name in the Host header', async () => {
  expect(await get(`http://rebound.invalid:${plain.port}/`, { lookup: loopback, agent: false })).toBe(
    `host=rebound.invalid:${plain.port}`,
  )
})

test('https: the pinned address, with SNI and the certificate checked against the name', async () => {
  const options = { lookup: loopback, agent: false, ca: cert }
  expect(await get(`https://pinned.test:${secure.port}/`, options)).toBe(`host=pinned.test:${secure.port}`)
  // The same server under another name fails the certificate check: the name, not the address, is what is verified.
  await expect(get(`https://other.test:${secure.port}/`, options)).rejects.toMatchObject({
    code: 'ERR_TLS_CERT_ALTNAME_INVALID',
  })
})
