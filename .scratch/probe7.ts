import { startTestServer } from '../test/helpers'
const t = await startTestServer({}, { classifier: { classify: async () => ({}), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
for (const p of ['/swagger', '/swagger/json', '/', '/gallery', '/u/nobody', '/dashboard', '/nope', '/i/abc', '/assets/site.js', '/healthz', '/api/gallery']) {
  const r = await t.fetch(p)
  console.log(r.status, p, r.headers.get('content-type'), '|', r.headers.get('content-security-policy'), '|', r.headers.get('x-frame-options'), r.headers.get('referrer-policy'), r.headers.get('x-content-type-options'))
}
await t.stop()
