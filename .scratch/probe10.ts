import { startTestServer, userWithKey, jsonBody } from '../test/helpers'
const t = await startTestServer({}, { classifier: { classify: async () => ({}), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const a = await userWithKey(t)
let r = await t.json('/api/webhooks', { method: 'POST', ...jsonBody({ url: 'https://example.com/a-secret-hook', events: ['image.uploaded'] }, a.bearer) })
console.log(r.status, JSON.stringify(r.body))
const res = await t.fetch('/api/v1/tus', { method: 'POST', headers: { ...a.keyHeader, 'tus-resumable': '1.0.0', 'upload-length': '1000' } })
console.log(res.status, [...res.headers], await res.text())
await t.stop()
