import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { images } from '../../src/db/schema'
import { tempDir } from '../lib/proc'
const n = 30000
const db = openDatabase(join(tempDir('chunks-'), 'imghost.sqlite'))
const ids = Array.from({ length: n }, (_, i) => i.toString(36).padStart(8, '0'))
for (let i = 0; i < n; i += 1000) db.insert(images).values(ids.slice(i, i + 1000).map((id) => ({ id, filename: 'x', mime: 'image/jpeg', ext: 'jpg', width: 1, height: 1, size: 1, sha256: id }))).run()
if (process.env.NOCKPT) db.$client.exec('PRAGMA wal_autocheckpoint=0')
const up = db.$client.prepare('UPDATE images SET views = views + ?1 WHERE id = ?2')
const tx = db.$client.transaction((c: string[]) => { for (const id of c) up.run(1, id) })
for (let r = 0; r < 3; r++) {
  const times: number[] = []
  for (let i = 0; i < n; i += 500) { const t = performance.now(); tx(ids.slice(i, i + 500)); times.push(performance.now() - t) }
  times.sort((a, b) => b - a)
  console.log('round', r, 'top chunk ms', times.slice(0, 5).map((x) => x.toFixed(1)).join(' '), 'median', times[times.length >> 1].toFixed(2))
}
