import { Elysia } from 'elysia'
import { join } from 'node:path'
import { stat } from 'node:fs/promises'
import { statSync } from 'node:fs'
import { loadConfig } from '../../src/config'
import { openDatabase } from '../../src/db/client'
import { createImageService } from '../../src/modules/images/service'
import { createConfiguredStorage } from '../../src/storage/configured'
const [dataDir, port, step] = process.argv.slice(2)
const config = loadConfig({ DATA_DIR: dataDir })
const db = openDatabase(join(dataDir, 'imghost.sqlite'))
const storage = createConfiguredStorage(config)
const images = createImageService({ db, config, storage })
const path = (id: string) => join(dataDir, 'files/thumbs', `${id}.webp`)
const H = { 'content-type': 'image/webp', etag: '"x"', 'cache-control': 'public, max-age=31536000, immutable', 'accept-ranges': 'bytes', 'x-content-type-options': 'nosniff' }
const handlers: Record<string, (id: string) => any> = {
  file: (id) => new Response(Bun.file(path(id))),
  find: (id) => (images.find(id), new Response(Bun.file(path(id)))),
  headers: (id) => (images.find(id), new Response(Bun.file(path(id)), { headers: { ...H, 'content-length': '15000' } })),
  asyncstat: async (id) => { images.find(id); const s = await stat(path(id)); return new Response(Bun.file(path(id)), { headers: { ...H, 'content-length': String(s.size) } }) },
  syncstat: (id) => { images.find(id); const s = statSync(path(id)); return new Response(Bun.file(path(id)), { headers: { ...H, 'content-length': String(s.size) } }) },
  bunsize: (id) => { images.find(id); const f = Bun.file(path(id)); return new Response(f, { headers: { ...H } }) },
}
const h = handlers[step]
new Elysia().get('/t/:file', ({ params }) => h(params.file.slice(0, 8))).listen({ port: Number(port), hostname: '127.0.0.1' })
