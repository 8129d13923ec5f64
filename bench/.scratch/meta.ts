import { Elysia } from 'elysia'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { openDatabase } from '../../src/db/client'
import { createImageService } from '../../src/modules/images/service'
import { createConfiguredStorage } from '../../src/storage/configured'
import { ImageDetailsResponse, ImageIdParams } from '../../src/modules/images/model'
const [dataDir, port, step] = process.argv.slice(2)
const config = loadConfig({ DATA_DIR: dataDir })
const db = openDatabase(join(dataDir, 'imghost.sqlite'))
const images = createImageService({ db, config, storage: createConfiguredStorage(config) })
const app = new Elysia()
if (step === 'plain') app.get('/m/:id', ({ params }) => ({ success: true as const, data: images.details(params.id) }))
if (step === 'params') app.get('/m/:id', ({ params }) => ({ success: true as const, data: images.details(params.id) }), { params: ImageIdParams })
if (step === 'response') app.get('/m/:id', ({ params }) => ({ success: true as const, data: images.details(params.id) }), { params: ImageIdParams, response: { 200: ImageDetailsResponse } })
if (step === 'find') app.get('/m/:id', ({ params }) => ({ success: true as const, data: images.find(params.id) }))
app.listen({ port: Number(port), hostname: '127.0.0.1' })
