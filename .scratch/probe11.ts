import { startTestServer, userWithKey } from '../test/helpers'
const t = await startTestServer({}, { classifier: { classify: async () => ({}), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const a = await userWithKey(t)
for (const body of ['"null"', '"x"', '5', 'null', '[]', '"{\\"privateAccount\\":true}"', 'true']) {
  const r = await t.fetch('/api/account', { method: 'PATCH', headers: { 'content-type': 'application/json', ...a.bearer }, body })
  console.log(body, r.status, await r.text())
}
for (const body of ['"null"', '"{\\"title\\":\\"x\\"}"', '5']) {
  const r = await t.fetch('/api/albums', { method: 'POST', headers: { 'content-type': 'application/json', ...a.bearer }, body })
  console.log('albums', body, r.status, (await r.text()).slice(0, 100))
}
await t.stop()
