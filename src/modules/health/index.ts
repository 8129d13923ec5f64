import { statfsSync } from 'node:fs'
import { Elysia, t } from 'elysia'
import { type Db, run } from '../../db/client'
import { notFound, StorageFull, unauthorized } from '../../errors'
import { lastFaultAt } from '../../faults'
import { errors, faultAnswer, HttpError, httpErrorOf } from '../../http/errors'
import type { Metrics } from '../../http/observability'
import { safeEqual } from '../../lib/crypto'
import { log } from '../../log'
import type { Classifier } from '../../moderation'
import type { Storage } from '../../storage'
import { VERSION } from '../../version'
import { bytesStored } from '../images/counts'
import { writeProbe } from './repository'

/**
 * How long a check's verdict stands. A write invalidates every SQLite reader's page cache (a busy gallery read ~25%
 * slower with one a second), so a healthy verdict stands 10 s, unless a request meets a fault meanwhile; a failed one
 * a second, so recovery shows soon. A flood of health checks costs one small write per verdict at most.
 */
const HEALTHY_TTL_MS = 10_000
const FAILED_TTL_MS = 1000
/**
 * Below this much free space in DATA_DIR (SQLite's database, every upload's temp files), the service counts as down:
 * uploads would fail, even while the database's write-ahead log still has room to reuse.
 */
const MIN_FREE_BYTES = 1024 * 1024

/**
 * Whether the service can write: the database, by writing one row of `health_probe` and committing it (a read-only
 * file or mount, a lock held by another process, a full disk all fail it, where a read or a rolled-back transaction
 * would pass), and the free space of its file system (statfs). Returns the answer's error, or null when both pass.
 */
function writeCheck(db: Db, dataDir: string) {
  let checked = { at: -Infinity, healthy: false, failure: Promise.resolve(null as HttpError | null) }
  const check = async (now: number): Promise<HttpError | null> => {
    try {
      await writeProbe(db, now)
    } catch (error) {
      return faultAnswer(error) ?? new HttpError(503, 'Database unavailable')
    }
    const { bavail, bsize } = statfsSync(dataDir)
    return bavail * bsize < MIN_FREE_BYTES ? httpErrorOf(new StorageFull()) : null
  }
  const outOfDate = (now: number) =>
    checked.healthy
      ? now - checked.at >= HEALTHY_TTL_MS || lastFaultAt() >= checked.at
      : now - checked.at >= FAILED_TTL_MS
  // Checks that arrive while one runs share its verdict.
  return () => {
    const now = Date.now()
    if (outOfDate(now)) {
      const current = { ...checked, at: now, healthy: false }
      current.failure = check(now).then((failure) => {
        current.healthy = !failure
        return failure
      })
      checked = current
    }
    return checked.failure
  }
}

/**
 * How long the store's verdict stands, healthy or not: a balancer polling every second or two makes at most one probe
 * request per verdict (a list of one key in a bucket), and an outage shows within it.
 */
const STORAGE_TTL_MS = 2000

/**
 * Whether the image store can serve (`Storage.probe`: a list of one key in a bucket, the files directories' access on
 * disk): while it cannot, every /cdn read and upload fails, so the instance is out too. Returns the answer's error, or
 * null when it serves.
 */
function storageCheck(storage: Pick<Storage, 'probe'>) {
  let checked = { at: -Infinity, failure: Promise.resolve(null as HttpError | null) }
  return () => {
    const now = Date.now()
    // A fault a request met since (the bucket failing an upload) asks again at once.
    if (now - checked.at >= STORAGE_TTL_MS || lastFaultAt() >= checked.at) {
      checked = {
        at: now,
        failure: storage.probe().then(
          () => null,
          (error) => {
            // The cause (a bucket's address, an errno) is for the operator's log; the answer says which part failed.
            log.warn('health: the image store cannot serve', { error: String(error), cause: String(error?.cause) })
            return new HttpError(503, `Storage unavailable: ${error?.message ?? error}`, {}, STORAGE_RETRY)
          },
        ),
      }
    }
    return checked.failure
  }
}

const STORAGE_RETRY = { 'retry-after': '5' }

/** Operator endpoints: liveness, and Prometheus metrics behind a bearer token (off when no token is set). */
export function healthModule(deps: {
  db: Db
  dataDir: string
  storage: Pick<Storage, 'probe'>
  metrics: Metrics
  metricsToken: string
  classifier: Classifier
}) {
  const { db } = deps
  const databaseWritable = writeCheck(db, deps.dataDir)
  const storageServes = storageCheck(deps.storage)
  return new Elysia({ name: 'module-health' })
    .get(
      '/healthz',
      async ({ set }) => {
        const failures = (await Promise.all([databaseWritable(), storageServes()])).filter((f) => f !== null)
        if (failures.length === 0) return { status: 'ok' as const, version: VERSION }
        // A 507 (disk full) is a 503 here: the service is unavailable, whatever the cause, and says which part.
        set.status = 503
        Object.assign(set.headers, failures[0]!.headers)
        return { error: failures.map((f) => f.message).join('; ') } as never
      },
      {
        response: { 200: t.Object({ status: t.Literal('ok'), version: t.String() }), ...errors(503) },
        detail: {
          tags: ['Operations'],
          summary:
            'Liveness: the database can be written and its disk has room (checked at most every 10 s while healthy, at once after a fault, every second while failing), and the image store answers (checked at most every 2 s); the running version',
        },
      },
    )
    .get(
      '/metrics',
      async ({ headers, set }) => {
        if (!deps.metricsToken) throw notFound()
        const given = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1] ?? ''
        if (!safeEqual(given, deps.metricsToken)) throw unauthorized('Missing or wrong metrics token')
        const storageUsedBytes = await run(bytesStored(db))
        set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
        return deps.metrics.render({ storageUsedBytes, queueDepth: deps.classifier.queueDepth })
      },
      { detail: { hide: true } },
    )
}
