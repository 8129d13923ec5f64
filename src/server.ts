import { mkdirSync } from 'node:fs'
import { type AppDeps, createApp, operatorFiles } from './app'
import type { Config } from './config'
import { openChangeFeed } from './db/changes'
import { startCheckpointer } from './db/checkpointer'
import { byEngine, closeDatabase, openServiceDatabase, SERVER_BUSY_TIMEOUT_MS } from './db/client'
import { sharedDatabase } from './db/dialect'
import { exclusiveJobs } from './db/jobs'
import { lockDataDir } from './db/lock'
import { SHARED_SYNC_MS } from './http/rate-limit'
import { loadJwtSecret, loadTotpKey, loadVariantSecret } from './lib/secrets'
import { sweepEndedWindows } from './limits/windows'
import { log } from './log'
import { createNsfwClassifier } from './moderation'
import { createRescanner, type RescanOptions } from './moderation/rescan'
import { createMailer } from './modules/auth/mailer'
import { sweepOrphans } from './modules/images/orphans'
import { createPhashBackfill, type PhashBackfillOptions } from './modules/images/phash-backfill'
import { localReads, workerReads } from './modules/images/reads'
import { pendingScans, recordScan } from './modules/images/repository'
import type { UploadPipeline } from './modules/images/upload'
import { instanceId, sweepIntents } from './modules/images/upload/intents'
import { createConfiguredStorage } from './storage/configured'
import { SWEEP_INTERVAL_MS, type SweepOptions } from './storage/sweep'
import { mediaPoolFor } from './workers/media-pool'

export type ServerOverrides = Partial<Omit<AppDeps, 'config' | 'db'>> & {
  /** Timing of the background rescan of images whose upload-time scan failed (tests use short intervals). */
  rescan?: RescanOptions
  /** How often expired images are removed (tests use short intervals). */
  expirySweep?: { intervalMs?: number }
  /** How often expired resumable uploads are removed. */
  tusSweep?: { intervalMs?: number }
  /** The orphan sweep's interval and grace period (tests shorten them). */
  orphanSweep?: SweepOptions & { intervalMs?: number }
  /** Batch size and pause of the perceptual hash backfill. */
  phashBackfill?: PhashBackfillOptions
}

/** Buffered view counts and API key uses are written this often (and at shutdown). */
const VIEW_FLUSH_MS = 2000
/** Expired images already answer 404 everywhere; the sweep only frees their rows and files. */
const EXPIRY_SWEEP_MS = 60_000
const TUS_SWEEP_MS = 10 * 60_000

/** Opens the data directory and database, builds the app and listens; `stop` shuts everything down cleanly. */
export async function startServer(config: Config, overrides: ServerOverrides = {}) {
  const files = operatorFiles(config)
  mkdirSync(config.paths.dataDir, { recursive: true })
  // One server per data directory, before anything in it is touched (DataDirLockedError otherwise).
  const dataDirLock = lockDataDir(config.paths.dataDir, 'refusing to start')
  try {
    return await start(config, overrides, dataDirLock, files)
  } catch (error) {
    dataDirLock.release()
    throw error
  }
}

/**
 * The sweeps of stored files no row owns. A crash's (files stored under an upload intent, by this data directory's
 * earlier life): at once, in the background (a store that is down only delays it: the orphan sweep tries again every
 * hour). Every file without a row: from startup on, in the background (it walks every stored file, which the start
 * must not wait for), then on an interval (the grace period spares those of uploads in progress, in any instance: it is
 * longer than any upload lasts).
 */
function startFileSweeps(
  jobs: {
    db: Awaited<ReturnType<typeof openServiceDatabase>>
    config: Config
    overrides: ServerOverrides
    storage: AppDeps['storage']
    reads: Pick<ReturnType<typeof localReads>, 'storedAmong'>
    exclusive: ReturnType<typeof exclusiveJobs>
  },
  startedAt: number,
) {
  const { db, config, overrides, storage, reads, exclusive } = jobs
  const intents = { instance: instanceId(config.paths.dataDir), startedAt }
  const crashedUploads = sweepIntents(db, storage, intents).then(
    (removed) => removed > 0 && log.info('crashed uploads swept', { removed }),
    (error) => log.warn('sweeping crashed uploads failed; the orphan sweep tries again', { error: String(error) }),
  )
  const orphanSweep = periodic(
    exclusive,
    'orphan-sweep',
    overrides.orphanSweep?.intervalMs ?? SWEEP_INTERVAL_MS,
    async () => {
      const started = performance.now()
      await sweepIntents(db, storage, intents)
      const removed = await sweepOrphans(db, storage, config.paths.tmpDir, overrides.orphanSweep, reads.storedAmong)
      // How long a walk of every stored file took, and what it found: an operator (and the bench) can see it end.
      log.info('orphan sweep done', { removed, ms: Math.round(performance.now() - started) })
    },
  )
  return { crashedUploads, orphanSweep }
}

async function start(
  config: Config,
  overrides: ServerOverrides,
  dataDirLock: { release(): void },
  files: AppDeps['files'],
) {
  // Upload intents recorded before this moment are an earlier life's (upload/intents.ts).
  const startedAt = Date.now()
  const { sqliteFile, tmpDir } = config.paths
  const db = await openServiceDatabase({
    databaseUrl: config.database.url,
    sqlitePath: sqliteFile,
    busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS,
    serving: true,
  })
  // SQLite's WAL is checkpointed off the event loop; PostgreSQL checkpoints by itself.
  const checkpointer = byEngine(db, { sqlite: (sqlite) => startCheckpointer(sqlite, sqliteFile), pg: () => null })
  // SQLite's list reads run on a Worker's read-only connection; PostgreSQL's queries wait off the event loop already.
  const reads = byEngine(db, { sqlite: () => workerReads(sqliteFile), pg: () => localReads(db) })
  // What changed in the database, for the caches: on PostgreSQL what any instance changed.
  const changes = await openChangeFeed(db)
  if (config.database.url && config.storage.driver === 'local')
    log.warn('STORAGE=local with DATABASE_URL: every instance must see the same files directory (a shared volume)', {
      files: config.paths.filesDir,
    })
  const deps = appDeps(config, overrides, { db, reads, changes, files })
  const now = deps.now ?? Date.now
  // Background jobs that instances sharing a database run one at a time (each instance still has them scheduled).
  const exclusive = exclusiveJobs(db)
  const { crashedUploads, orphanSweep } = startFileSweeps(
    { db, config, overrides, storage: deps.storage, reads, exclusive },
    startedAt,
  )
  const { app, services, rateLimit } = createApp(deps)
  // PostgreSQL: the global per-IP counts are added up across instances a few times a second.
  const rateSyncTimer = sharedDatabase
    ? setInterval(() => {
        rateLimit.sync().catch((error) => log.warn('rate count sync failed', { error: String(error) }))
      }, SHARED_SYNC_MS)
    : undefined
  await services.auth.ensureAdmin(config.auth.admin)
  // A failed flush (a locked or read-only database) keeps its counts and times: the next one writes them.
  const flushTimer = setInterval(() => {
    services.images
      .flushViewsGradually()
      .catch((error) => log.warn('view flush failed; counts kept for the next', { error: String(error) }))
    Promise.all([services.auth.flushUses(), services.variants.flushUses()]).catch((error) =>
      log.warn('API key, session or variant use flush failed; kept for the next', { error: String(error) }),
    )
  }, VIEW_FLUSH_MS)
  const rescanner = createRescanner(
    {
      scans: {
        pending: () => pendingScans(db),
        async record(id, mature) {
          await recordScan(db, id, mature)
          services.images.changedHere(id)
        },
      },
      storage: deps.storage,
      media: deps.media,
      classifier: deps.classifier,
      thresholds: config.nsfw.thresholds,
      tmpDir,
      exclusive,
    },
    { timeoutMs: config.nsfw.timeoutMs, ...overrides.rescan },
  )
  rescanner.start()
  // Images stored before perceptual hashes existed get theirs, in batches through the media workers, from startup on.
  const phashBackfill = createPhashBackfill(
    { db, storage: deps.storage, media: deps.media, tmpDir, exclusive },
    overrides.phashBackfill,
  )
  phashBackfill.start()
  // Removes expired images' files and rows, rate windows that have ended, expired sessions and emailed tokens: once at
  // startup (what expired while stopped), then on an interval.
  const expirySweep = periodic(
    exclusive,
    'expiry-sweep',
    overrides.expirySweep?.intervalMs ?? EXPIRY_SWEEP_MS,
    async () => {
      const started = performance.now()
      const removed = await services.images.sweepExpired()
      // A backlog (expired while stopped) is worked through here, each read taking off what is left of it till then.
      if (removed > 0) log.info('expired images removed', { removed, ms: Math.round(performance.now() - started) })
      await sweepEndedWindows(db, config, now())
      await services.auth.sweepExpired()
    },
  )
  // Resumable uploads past their expiry go with their data: at startup, then on an interval.
  const tusSweep = periodic(exclusive, 'tus-sweep', overrides.tusSweep?.intervalMs ?? TUS_SWEEP_MS, () =>
    services.tus.sweep(),
  )
  // Upload bodies are streamed and limited by the pipeline itself, per file and per request.
  app.listen({ port: config.http.port, hostname: '0.0.0.0', maxRequestBodySize: Number.MAX_SAFE_INTEGER })

  return {
    app,
    services,
    rateLimit,
    db,
    deps,
    rescanner,
    phashBackfill,
    port: app.server!.port,
    async stop() {
      // Stop accepting, let in-flight requests finish (within the deadline), write buffered views, close everything.
      await drain(app, services.pipeline, config.shutdown.timeoutMs)
      clearInterval(flushTimer)
      clearInterval(rateSyncTimer)
      await expirySweep.stop()
      await tusSweep.stop()
      await orphanSweep.stop()
      await crashedUploads
      // Webhook retries live in memory: those still waiting are dropped (see docs/clients.md, Webhooks).
      await services.webhooks.stop()
      await rescanner.stop()
      await phashBackfill.stop()
      try {
        await services.images.flushViews()
        await services.auth.flushUses()
        await services.variants.flushUses()
      } catch (error) {
        // The database cannot be written: these are lost, but the shutdown still completes.
        log.error('final flush failed: buffered views, key and session uses lost', { error: String(error) })
      }
      await deps.classifier.close()
      await deps.media.close()
      await reads.close()
      await checkpointer?.stop()
      await changes.close()
      await closeDatabase(db)
      dataDirLock.release()
    },
  }
}

/** After the deadline, how long the uploads answered 503 get for their answers to go out and their temp files to go. */
const CUT_GRACE_MS = 1000

/**
 * Stops listening and waits for the requests in flight, at most `timeoutMs`: then the uploads still arriving are
 * answered 503 (their temp files removed once their connections close) and every connection still open is closed.
 * The log says what was waited for and what was cut.
 */
async function drain(
  app: ReturnType<typeof createApp>['app'],
  pipeline: Pick<UploadPipeline, 'arriving' | 'cut'>,
  timeoutMs: number,
) {
  // Elysia forgets its server once stopped: kept here to close what is still open after the deadline.
  const server = app.server!
  const waiting = { requests: server.pendingRequests, uploadsArriving: pipeline.arriving() }
  if (waiting.requests > 0) log.info('shutdown: waiting for requests in flight', { ...waiting, timeoutMs })
  const drained = app.stop(false).then(() => true)
  if (await within(timeoutMs, drained)) return
  const { uploads, cleaned } = pipeline.cut()
  // The 503s close their connections as they go out; the rest (other requests, an answer stuck on its way) after that.
  const allCleaned = await within(
    CUT_GRACE_MS,
    cleaned.then(() => true),
  )
  const requests = server.pendingRequests
  await server.stop(true)
  if (!allCleaned) await within(CUT_GRACE_MS, cleaned)
  log.warn('shutdown deadline passed: cut what was still in flight', {
    timeoutMs,
    uploadsAnswered503: uploads,
    requestsStillOpen: requests,
  })
}

/** `promise`'s value, or false once `ms` have passed. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T | false> {
  let timer: Timer | undefined
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A background job run once now and then every `intervalMs`, one instance at a time (`exclusive`); a failure is logged
 * and the next run tries again. `stop` ends the interval and waits for a run under way.
 */
function periodic(
  exclusive: ReturnType<typeof exclusiveJobs>,
  name: string,
  intervalMs: number,
  run: () => Promise<unknown>,
) {
  let running: Promise<unknown> = Promise.resolve()
  const tick = () => {
    running = exclusive(name, run).catch((error) =>
      log.error(`${name.replace('-', ' ')} failed`, { error: String(error) }),
    )
  }
  tick()
  const timer = setInterval(tick, intervalMs)
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}

/** What the app is built from: the overrides a test gives, else the configured mailer, secrets, storage and workers. */
function appDeps(
  config: Config,
  overrides: ServerOverrides,
  opened: Pick<AppDeps, 'db' | 'reads' | 'changes' | 'files'>,
): AppDeps {
  return {
    config,
    ...opened,
    mailer:
      overrides.mailer ??
      createMailer({
        smtpUrl: config.smtp.url,
        from: config.smtp.from,
        publicUrl: config.site.publicUrl,
        siteName: config.site.name,
      }),
    jwtSecret: overrides.jwtSecret ?? loadJwtSecret(config),
    variantSecret: overrides.variantSecret ?? loadVariantSecret(config),
    totpKey: loadTotpKey(config),
    storage: overrides.storage ?? createConfiguredStorage(config),
    media: overrides.media ?? mediaPoolFor(config),
    classifier:
      overrides.classifier ??
      createNsfwClassifier({
        timeoutMs: config.nsfw.timeoutMs,
        maxQueue: config.nsfw.maxQueue,
        backend: config.nsfw.backend,
        idleUnloadMs: config.nsfw.idleUnloadMs,
      }),
    webhookOptions: overrides.webhookOptions,
    tusOptions: overrides.tusOptions,
    now: overrides.now ?? Date.now,
  }
}
