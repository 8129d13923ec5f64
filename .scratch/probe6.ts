import { startTestServer } from '../test/helpers'
const t = await startTestServer({}, { classifier: { classify: async () => ({}), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const doc = (await t.json('/swagger/json')).body
for (const [p, ops] of Object.entries<any>(doc.paths)) for (const [m, op] of Object.entries<any>(ops)) {
  console.log(m.toUpperCase(), p, JSON.stringify(op.security), JSON.stringify(op.parameters?.map((x: any) => [x.in, x.name, x.required, x.schema])), op.requestBody ? Object.keys(op.requestBody.content).join(',') + ' ' + JSON.stringify(Object.values<any>(op.requestBody.content)[0].schema).slice(0, 400) : '')
}
console.log(JSON.stringify(doc.components?.schemas ? Object.keys(doc.components.schemas) : null))
await t.stop()
