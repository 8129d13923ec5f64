// How long one periodic flush of buffered view counts holds the event loop, with `n` distinct images viewed since the last
// flush (the worst case: every view in the window hit a different image). Uses the service's own image service and
// database setup on a temp data directory. Usage: bun bench/ref/flush-views.ts <n> [rounds]
import { rmSync } from 'node:fs'
import { loadConfig } from '../../src/config'
import { localChangeFeed } from '../../src/db/changes'
import { startCheckpointer } from '../../src/db/checkpointer'
import { closeDatabase, openDatabase } from '../../src/db/client'
import { images } from '../../src/db/schema'
import { createImageService } from '../../src/modules/images/service'
import { createConfiguredStorage } from '../../src/storage/configured'
import { tempDir } from '../lib/proc'
import { median } from '../lib/stats'

const n = Number(process.argv[2] ?? 10_000)
const rounds = Number(process.argv[3] ?? 3)
const dataDir = tempDir('imghost-bench-flush-')
try {
  const config = loadConfig({ DATA_DIR: dataDir })
  const db = openDatabase(config.paths.sqliteFile)
  // As the server runs it: checkpoints on a Worker, not inside the flush's commits.
  const checkpointer = startCheckpointer(db, config.paths.sqliteFile)
  await Bun.sleep(200)
  const ids = Array.from({ length: n }, (_, i) => i.toString(36).padStart(8, '0'))
  for (let i = 0; i < n; i += 1000) {
    db.insert(images)
      .values(
        ids.slice(i, i + 1000).map((id) => ({
          id,
          filename: `${id}.jpg`,
          mime: 'image/jpeg',
          ext: 'jpg',
          width: 1,
          height: 1,
          size: 1,
          sha256: id,
        })),
      )
      .run()
  }
  const service = createImageService({
    db,
    config,
    storage: createConfiguredStorage(config),
    changes: localChangeFeed(db),
  })
  // The server's timer runs flushViewsGradually (one chunk per event-loop turn) when the service has it.
  const flush =
    (service as { flushViewsGradually?: () => Promise<void> }).flushViewsGradually ?? (async () => service.flushViews())
  const blocks: number[] = []
  const totals: number[] = []
  // One flush first, not measured, like every figure's warm-up: a new database's WAL file grows on its first writes
  // (up to ~20 ms for one chunk here), a running server's has long reached its size.
  for (const id of ids) service.countView(id)
  await flush()
  for (let r = 0; r < rounds; r++) {
    for (const id of ids) service.countView(id)
    // Event-loop lag probe: the longest gap between two turns of the loop while the flush runs is how long it blocked.
    let longest = 0
    let last = performance.now()
    let probing = true
    const tick = () => {
      const now = performance.now()
      longest = Math.max(longest, now - last)
      last = now
      if (probing) setImmediate(tick)
    }
    setImmediate(tick)
    await new Promise((r) => setTimeout(r, 5))
    const t = performance.now()
    last = t
    await flush()
    const took = performance.now() - t
    await new Promise((r) => setImmediate(r))
    probing = false
    longest = Math.max(longest, performance.now() - last)
    blocks.push(longest)
    totals.push(took)
  }
  const total = db.$client.query('SELECT sum(views) AS v FROM images').get() as { v: number }
  if (total.v !== n * (rounds + 1)) throw new Error(`expected ${n * (rounds + 1)} views, found ${total.v}`)
  await checkpointer.stop()
  await closeDatabase(db)
  console.log(
    JSON.stringify({
      n,
      rounds,
      gradual: 'flushViewsGradually' in service,
      medianMs: median(blocks),
      maxMs: Math.max(...blocks),
      totalMs: median(totals),
    }),
  )
} finally {
  rmSync(dataDir, { recursive: true, force: true })
}
