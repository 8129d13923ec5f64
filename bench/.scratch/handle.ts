// Scratch: µs per app.handle() for variants of the app's plugin stack (no network), to attribute per-request overhead.
import { Elysia } from 'elysia'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { openDatabase } from '../../src/db/client'
import { authGuard } from '../../src/http/auth'
import { errorModel } from '../../src/http/errors'
import { jsonBodyLimit } from '../../src/http/body-limit'
import { createMetrics, requestLog } from '../../src/http/observability'
import { apiDocs } from '../../src/http/openapi'
import { globalRateLimit } from '../../src/http/rate-limit'
import { cdnModule } from '../../src/modules/cdn'
import { createImageService } from '../../src/modules/images/service'
import { createAuthService } from '../../src/modules/auth/service'
import { createConfiguredStorage } from '../../src/storage/configured'
import { imagesModule } from '../../src/modules/images'

const [dataDir, id] = process.argv.slice(2)
const config = loadConfig({ DATA_DIR: dataDir, GLOBAL_RATE_LIMIT: '1000000000' })
const db = openDatabase(join(dataDir, 'imghost.sqlite'))
const storage = createConfiguredStorage(config)
const images = createImageService({ db, config, storage })
const metrics = createMetrics()
const auth = createAuthService(db, { send: async () => {} } as any)
function build(on: Set<string>) {
  let app: any = new Elysia()
  if (on.has('err')) app = app.use(errorModel)
  if (on.has('log')) app = app.use(requestLog(metrics, { log: false }))
  if (on.has('json')) app = app.use(jsonBodyLimit)
  if (on.has('rate')) app = app.use(globalRateLimit({ limit: 1e9, trustProxy: false }))
  if (on.has('docs')) app = app.use(apiDocs('x'))
  const guard = authGuard(auth, { secret: 'x'.repeat(48), trustProxy: false })
  if (on.has('guard')) app = app.use(guard)
  app = app.use(imagesModule({ config, images, pipeline: {} as any, guard, metrics }))
  app = app.use(cdnModule({ images, storage }))
  return app
}
const fakeServer = { requestIP: () => ({ address: '127.0.0.1', family: 'IPv4', port: 1 }) }
async function bench(label: string, on: Set<string>, path: string) {
  const app = build(on)
  const server = { requestIP: () => ({ address: '127.0.0.1', family: 'IPv4', port: 1 }) }
  ;(app as any).server = server
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await app.handle(new Request('http://127.0.0.1:1' + path))
      if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`)
      if (path.startsWith('/api')) await res.text()
    }
  }
  await run(5000)
  const times: number[] = []
  for (let r = 0; r < 7; r++) {
    const n = 10000
    const t = performance.now()
    await run(n)
    times.push(((performance.now() - t) / n) * 1000)
  }
  console.log(label.padEnd(20), path.padEnd(28), 'min', Math.min(...times).toFixed(1), 'us  median', times.sort((a,b)=>a-b)[3].toFixed(1))
}
const all = ['err', 'log', 'json', 'rate', 'docs', 'guard']
for (const path of [`/cdn/medium/${id}.webp`, `/api/v1/image/${id}`]) {
  await bench('none', new Set(), path)
  for (const p of all) await bench(`only ${p}`, new Set([p]), path)
  await bench('all', new Set(all), path)
}
