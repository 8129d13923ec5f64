import { startTestServer } from '../test/helpers'
const t = await startTestServer({}, { classifier: { classify: async () => ({}), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
console.log(await (await t.fetch('/swagger')).text())
await t.stop()
