import { startTestServer, userWithKey } from '../test/helpers'
import { rawRequest } from './raw'
const t = await startTestServer({}, { classifier: { classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const port = t.server.port
const u = await userWithKey(t)
async function* slow(total = Infinity, chunk = 64 * 1024, delay = 5) {
  const buf = new Uint8Array(chunk).fill(97)
  let sent = 0
  while (sent < total) { yield buf; sent += chunk; await Bun.sleep(delay) }
}
const B = '----x'
const head = (path: string, extra: string) => `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=${B}\r\n${extra}Connection: close\r\n\r\n`
async function* multipartSlow(delay = 5) {
  yield new TextEncoder().encode(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`)
  yield* slow(Infinity, 64 * 1024, delay)
}
let r = await rawRequest(port, head('/api/upload', 'Content-Length: 10737418240\r\n'), multipartSlow(50))
console.log('anon 10GB CL', r.status, Math.round(r.ms), r.body)
r = await rawRequest(port, head('/api/v1/upload', `X-API-Key: ${u.apiKey}\r\nContent-Length: 10737418240\r\n`), multipartSlow(50))
console.log('key 10GB CL', r.status, Math.round(r.ms), r.body)
// chunked
async function* chunked(src: AsyncIterable<Uint8Array>) { for await (const c of src) { yield new TextEncoder().encode(c.length.toString(16) + '\r\n'); yield c; yield new TextEncoder().encode('\r\n') } }
let sent = 0
async function* counting(src: AsyncIterable<Uint8Array>) { for await (const c of src) { sent += c.length; yield c } }
r = await rawRequest(port, head('/api/upload', 'Transfer-Encoding: chunked\r\n'), chunked(counting(multipartSlow(1))), 60000)
console.log('anon chunked', r.status, Math.round(r.ms), r.body, 'sent', sent)
sent = 0
r = await rawRequest(port, `POST /api/albums HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${u.token}\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\nConnection: close\r\n\r\n`, slow(5_000_000, 65536, 20))
console.log('json CL', r.status, Math.round(r.ms), r.body)
r = await rawRequest(port, `POST /api/albums HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${u.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`, chunked(counting(slow(Infinity, 65536, 1))))
console.log('json chunked', r.status, Math.round(r.ms), r.body, 'sent', sent)
sent = 0
r = await rawRequest(port, `POST /api/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`, chunked(counting(slow(Infinity, 65536, 1))))
console.log('json chunked login', r.status, Math.round(r.ms), r.body, 'sent', sent)
await t.stop()
