// One run of one of the service's background jobs on a seeded library, with the service's own code, in a process of
// its own under the server probe (bun --preload bench/lib/server-probe.ts, BENCH_LAG_FILE): prints the run's time, its
// longest event-loop block (the server thread's CPU in its longest stall: the most one tick of the job would hold the
// server's loop) and the process's peak RSS. The service must be stopped (the jobs are the server's, run here alone).
// Configured by the service's environment (DATA_DIR, DATABASE_URL). `count`: how many rows the job finds to work on,
// made so before the timed run (expired copies, unhashed, pending scan, viewed), after a short unmeasured run.
// Usage: bun --preload bench/lib/server-probe.ts bench/scale/job.ts <orphan-sweep|expiry-sweep|phash-backfill|rescan|view-flush> <count>

import { link } from 'node:fs/promises'
import { asc, inArray, ne } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { localChangeFeed } from '../../src/db/changes'
import { startCheckpointer } from '../../src/db/checkpointer'
import { byEngine, closeDatabase, type Db, openServiceDatabase, SERVER_BUSY_TIMEOUT_MS } from '../../src/db/client'
import { images } from '../../src/db/schema'
import { newPublicId } from '../../src/lib/crypto'
import { createNsfwClassifier } from '../../src/moderation'
import { createRescanner } from '../../src/moderation/rescan'
import { sweepOrphans } from '../../src/modules/images/orphans'
import { createPhashBackfill } from '../../src/modules/images/phash-backfill'
import { localReads, workerReads } from '../../src/modules/images/reads'
import { pendingScans, recordScan } from '../../src/modules/images/repository'
import { createImageService } from '../../src/modules/images/service'
import { originalKey, thumbnailKey } from '../../src/storage'
import { createConfiguredStorage } from '../../src/storage/configured'
import { mediaPoolFor } from '../../src/workers/media-pool'
import { epochNow, readGaps, worstStall } from '../lib/lag'

const [job, countArg] = process.argv.slice(2)
const count = Number(countArg)
const config = loadConfig()
const db: Db = await openServiceDatabase({
  databaseUrl: config.database.url,
  sqlitePath: config.paths.sqliteFile,
  busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS,
  serving: true,
})
// As the server runs SQLite: its WAL checkpointed on a Worker, not inside the job's commits.
const checkpointer = byEngine(db, {
  sqlite: (sqlite) => startCheckpointer(sqlite, config.paths.sqliteFile),
  pg: () => null,
})
const storage = createConfiguredStorage(config)
const { tmpDir } = config.paths

/** `n` rows spread over the library (ids are random), whose state the job is about to change. */
async function someRows(n: number): Promise<string[]> {
  const rows = await db
    .select({ id: images.id })
    .from(images)
    // The upload the library was cloned from stays as it is: the reads ask for it.
    .where(ne(images.id, process.env.BENCH_SOURCE_ID ?? ''))
    .orderBy(asc(images.id))
    .limit(n)
  return rows.map((r) => r.id)
}

/**
 * `n` new rows, copies of existing ones under new ids, expired a second ago, their files hard-linked as the seed does:
 * what the expiry sweep removes, so the library keeps its size run after run.
 */
async function expiredCopies(n: number, now: number) {
  const rows = await db
    .select()
    .from(images)
    .where(inArray(images.id, await someRows(n)))
  const copies = rows.map((r) => ({ ...r, id: newPublicId(), expiresAt: new Date(now - 1000) }))
  for (const [from, to] of rows.map((r, i) => [r, copies[i]] as const)) {
    if (!storage.localPath) break
    for (const [a, b] of [
      [originalKey(from.id, from.ext), originalKey(to.id, to.ext)],
      [thumbnailKey(from.id), thumbnailKey(to.id)],
    ])
      await link(storage.localPath(a), storage.localPath(b)).catch(() => {})
  }
  for (let i = 0; i < copies.length; i += 500) await db.insert(images).values(copies.slice(i, i + 500))
}

/** Makes `n` rows' state what the job looks for (untimed), then returns the run, which answers what it did. */
async function prepare(n: number): Promise<() => Promise<unknown>> {
  const now = Date.now()
  switch (job) {
    case 'orphan-sweep': {
      // Its rows looked up as the server looks them up: through the list reads (Workers on SQLite).
      const reads = config.database.url ? localReads(db) : workerReads(config.paths.sqliteFile)
      return async () => {
        const removed = await sweepOrphans(db, storage, tmpDir, {}, reads.storedAmong)
        await reads.close()
        return removed
      }
    }
    case 'expiry-sweep': {
      await expiredCopies(n, now)
      const service = createImageService({ db, config, storage, changes: localChangeFeed(db) })
      return () => service.sweepExpired()
    }
    case 'phash-backfill': {
      await db
        .update(images)
        .set({ phash: null, phashTried: false })
        .where(inArray(images.id, await someRows(n)))
      const media = mediaPoolFor(config)
      const backfill = createPhashBackfill({ db, storage, media, tmpDir })
      return async () => {
        const counts = await backfill.runToEnd()
        await media.close()
        return counts
      }
    }
    case 'rescan': {
      await db
        .update(images)
        .set({ scanStatus: 'pending' })
        .where(inArray(images.id, await someRows(n)))
      const media = mediaPoolFor(config)
      const classifier = createNsfwClassifier({
        timeoutMs: config.nsfw.timeoutMs,
        maxQueue: config.nsfw.maxQueue,
        backend: config.nsfw.backend,
      })
      const rescanner = createRescanner(
        {
          scans: { pending: () => pendingScans(db), record: (id, mature) => recordScan(db, id, mature) },
          storage,
          media,
          classifier,
          thresholds: config.nsfw.thresholds,
          tmpDir,
        },
        { timeoutMs: config.nsfw.timeoutMs },
      )
      return async () => {
        const result = await rescanner.runOnce()
        await media.close()
        await classifier.close()
        return result
      }
    }
    case 'view-flush': {
      const service = createImageService({ db, config, storage, changes: localChangeFeed(db) })
      for (const id of await someRows(n)) service.countView(id, 'Mozilla/5.0 (bench)')
      return () => service.flushViewsGradually()
    }
    default:
      throw new Error(`unknown job ${job}`)
  }
}

// A short run first, unmeasured, as a server has run its jobs before: the code it loads and compiles on first use (the
// classifier's model for a rescan) is not charged to the measured run.
const WARMUP: Record<string, number> = { 'view-flush': 500, 'expiry-sweep': 10, 'phash-backfill': 5, rescan: 2 }
if (WARMUP[job]) await (await prepare(WARMUP[job]))()
const run = await prepare(count)
// The preparation's own stalls (counting 10,000 views in one go, inserting copies) end, and are written, before the
// window opens: they are the harness's, not the job's.
await Bun.sleep(50)
const from = epochNow()
const t = performance.now()
const result = await run()
const ms = performance.now() - t
const to = epochNow()
// The probe's last stalls are in the file once the loop turns again.
await Bun.sleep(20)
const block = worstStall(readGaps(process.env.BENCH_LAG_FILE ?? ''), from, to)
await checkpointer?.stop()
await closeDatabase(db)
console.log(
  JSON.stringify({
    job,
    count,
    ms,
    blockCpuMs: block.cpuMs,
    blockMs: block.gapMs,
    peakRss: process.resourceUsage().maxRSS * 1024,
    result,
  }),
)
process.exit(0)
