import { startTestServer, userWithKey, jsonBody } from '../test/helpers'
import { makeImage, uploadForm } from '../test/fixtures'
const t = await startTestServer({}, { classifier: { classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const u = await userWithKey(t)
const up = await t.json('/api/v1/upload', { method: 'POST', headers: u.keyHeader, body: uploadForm([{ bytes: await makeImage('png') }]) })
console.log(up.status, up.body.id)
const paths = ['/cdn/..%2f..%2fetc%2fpasswd', '/cdn/%2e%2e/%2e%2e/etc/passwd', '/cdn/..%252f..%252fetc%252fpasswd', '/cdn/..\\..\\etc\\passwd', '/cdn/%00', '/cdn/abc%00.png', '/cdn/medium/..%2f..%2fimghost.sqlite', '/cdn/medium/%2e%2e%2fjwt-secret', '/i/..%2f..', '/i/%00', '/a/%2e%2e', '/u/..%2f', '/api/v1/image/..%2f..%2f', '/api/v1/image/%00', '/api/albums/%2e%2e', '/api/embeds/%2e%2e', '/api/keys/%00', '/api/admin/users/%2e', '/cdn/../../etc/passwd', '/api/users/%00', '/api/users/..%2f..', '/assets/..%2fpage.ts', '/assets/%2e%2e%2f%2e%2e%2fconfig.ts', `/cdn/${up.body.id}.png%00.svg`, '/cdn/%E0%A4%A', '/i/%E0%A4%A', '/api/v1/image/%E0%A4%A']
for (const p of paths) {
  const r = await fetch(t.url + p, { headers: { ...u.bearer } })
  const text = await r.text()
  console.log(r.status, p, r.headers.get('content-type'), text.slice(0, 80).replace(/\n/g, ' '))
}
await t.stop()
