import { startTestServer, userWithKey, jsonBody, makeAdmin } from '../test/helpers'
const t = await startTestServer({}, { classifier: { classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const a = await userWithKey(t); const adm = await userWithKey(t); makeAdmin(t, adm.user.id)
let r = await t.json(`/api/admin/users/${a.user.id}`, { method: 'PATCH', ...jsonBody({ banned: false, username: 'hacked', passwordHash: 'x', privateAccount: true }, adm.bearer) })
console.log('mass', r.status, JSON.stringify(r.body))
r = await t.json(`/api/account`, { method: 'PATCH', ...jsonBody({ privateAccount: false, role: 'admin', emailVerified: true }, a.bearer) })
console.log('mass2', r.status, JSON.stringify(r.body))
const deep = '['.repeat(200000) + ']'.repeat(200000)
for (const body of [deep, `{"title":"x","extra":${deep}}`, `{"title":${deep}}`, `{"__proto__":{"isPublic":true},"title":"p"}`, `{"constructor":{"prototype":{"x":1}},"title":"p"}`]) {
  const res = await t.fetch('/api/albums', { method: 'POST', headers: { 'content-type': 'application/json', ...a.bearer }, body })
  console.log('deep', res.status, (await res.text()).slice(0, 200))
}
const res = await t.fetch('/api/embeds', { method: 'POST', headers: { 'content-type': 'application/json', ...a.bearer }, body: JSON.stringify({ name: 'x', author_url: 'javascript:alert(1)' }) })
console.log('js url', res.status, await res.text())
for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'application/jsonx', '']) {
  const res = await t.fetch('/api/albums', { method: 'POST', headers: { 'content-type': ct, ...a.bearer }, body: '{"title":"ct"}' })
  console.log('ct', JSON.stringify(ct), res.status, (await res.text()).slice(0, 100))
}
await t.stop()
