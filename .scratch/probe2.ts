import { startTestServer, userWithKey } from '../test/helpers'
import { makeImage, uploadForm } from '../test/fixtures'
import { rawRequest } from './raw'
const t = await startTestServer({}, { classifier: { classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const u = await userWithKey(t)
const up = await t.json('/api/v1/upload', { method: 'POST', headers: u.keyHeader, body: uploadForm([{ bytes: await makeImage('png') }]) })
const port = t.server.port
const paths = ['/cdn/../../etc/passwd', '/cdn/%2e%2e/%2e%2e/etc/passwd', '/cdn/..%2f..%2fimghost.sqlite', '/cdn/..%252f..%252fimghost.sqlite', '/cdn/..\\..\\imghost.sqlite','/cdn/medium/../../imghost.sqlite', '/cdn/medium/..%5c..%5cjwt-secret', '/i/../../etc/passwd', '/a/%2e%2e', '/a/..%00', '/u/../etc', '/api/v1/image/../../x', '/api/v1/image/%2e%2e', '/api/albums/%2e%2e', '/api/albums/%2e%2e/images/%2e%2e', '/api/keys/%2e%2e', '/api/keys/1%00', '/api/embeds/%2e%2e', '/api/admin/users/%2e%2e', '/api/images/%2e%2e/embed', '/assets/../../package.json', '/assets/%2e%2e%2fpage.ts', `/cdn/${up.body.id}.png/../../../imghost.sqlite`, `/cdn/${up.body.id}.png%00`, '/cdn/%ff%fe', '/api/v1/image/%ff', '/i/%c0%ae%c0%ae', '/cdn//etc/passwd', '/cdn/files/originals/x', '/files/originals', '/data/imghost.sqlite', '/imghost.sqlite','/jwt-secret']
const methods: Record<string,string> = {}
for (const p of paths) for (const m of ['GET', 'DELETE', 'PUT', 'PATCH']) {
  const r = await rawRequest(port, `${m} ${p} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer ${u.token}\r\nX-API-Key: ${u.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`)
  console.log(r.status, m, p, (r.headers['content-type']??'').slice(0,20), r.body.slice(0, 60).replace(/\n/g, ' '))
}
await t.stop()
