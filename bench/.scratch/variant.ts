// Scratch: the app's /cdn route with plugins toggled, to attribute per-request overhead.
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

const [dataDir, port, flags] = process.argv.slice(2)
const on = new Set(flags.split(','))
const config = loadConfig({ DATA_DIR: dataDir, PORT: port, GLOBAL_RATE_LIMIT: '1000000000' })
const db = openDatabase(join(dataDir, 'imghost.sqlite'))
const storage = createConfiguredStorage(config)
const images = createImageService({ db, config, storage })
const metrics = createMetrics()
const auth = createAuthService(db, { send: async () => {} } as any)
let app: any = new Elysia()
if (on.has('err')) app = app.use(errorModel)
if (on.has('log')) app = app.use(requestLog(metrics, { log: false }))
if (on.has('json')) app = app.use(jsonBodyLimit)
if (on.has('rate')) app = app.use(globalRateLimit({ limit: 1e9, trustProxy: false }))
if (on.has('docs')) app = app.use(apiDocs('x'))
const guard = authGuard(auth, { secret: 'x'.repeat(48), trustProxy: false })
if (on.has('guard')) app = app.use(guard)
if (on.has('images')) app = app.use(imagesModule({ config, images, pipeline: {} as any, guard, metrics }))
app = app.use(cdnModule({ images, storage }))
app.listen({ port: Number(port), hostname: '127.0.0.1' })
console.log(JSON.stringify({ listening: port }))
