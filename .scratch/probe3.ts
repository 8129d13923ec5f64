import { startTestServer, userWithKey } from '../test/helpers'
import { rawRequest } from './raw'
const t = await startTestServer({ GLOBAL_RATE_LIMIT: '3' }, { classifier: { classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const port = t.server.port
for (const p of ['/api/gallery', '/api/gallery', '/api/gallery', '/api/gallery', '/%61pi/gallery', '/api%2fgallery', '//api/gallery', '/API/gallery', '/./api/gallery', '/x/../api/gallery', '/api/gallery?', '/api//gallery', 'http://localhost/api/gallery', '/ap%69/gallery', '/api/%67allery']) {
  const r = await rawRequest(port, `GET ${p} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
  console.log(r.status, p, JSON.stringify(r.headers).slice(0,300), r.body.slice(0, 80))
}
await t.stop()
