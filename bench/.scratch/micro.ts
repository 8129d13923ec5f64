import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { openDatabase } from '../../src/db/client'
import { createImageService } from '../../src/modules/images/service'
import { createConfiguredStorage } from '../../src/storage/configured'
const dataDir = process.argv[2], id = process.argv[3]
const config = loadConfig({ DATA_DIR: dataDir })
const db = openDatabase(join(dataDir, 'imghost.sqlite'))
const storage = createConfiguredStorage(config)
const images = createImageService({ db, config, storage })
const time = async (label: string, n: number, fn: () => unknown) => {
  for (let i = 0; i < 1000; i++) await fn()
  const t = performance.now()
  for (let i = 0; i < n; i++) await fn()
  console.log(label, (((performance.now() - t) / n) * 1000).toFixed(1), 'us')
}
const q = db.$client.query('SELECT * FROM images WHERE id = ?1 AND (expires_at IS NULL OR expires_at > ?2)')
await time('drizzle find', 20000, () => images.find(id))
await time('raw prepared', 20000, () => q.get(id, Date.now()))
const f = storage.file(`originals/${id}.jpg`)
await time('file.exists', 20000, () => storage.file(`originals/${id}.jpg`).exists())
await time('details', 20000, () => images.details(id))
import { and, eq, sql } from 'drizzle-orm'
import { images as imagesT } from '../../src/db/schema'
const prepared = db.select().from(imagesT).where(and(eq(imagesT.id, sql.placeholder('id')), sql`(${imagesT.expiresAt} IS NULL OR ${imagesT.expiresAt} > ${sql.placeholder('now')})`)).prepare()
await time('drizzle prepared', 20000, () => prepared.get({ id, now: Date.now() }))
console.log(prepared.get({ id, now: Date.now() }), images.find(id))
