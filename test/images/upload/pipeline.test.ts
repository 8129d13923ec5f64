/**
 * The upload pipeline built without a server (src/modules/images/upload.ts and its steps in src/modules/images/upload/): a real
 * database (SQLite in a temp DATA_DIR, or PostgreSQL under `bun test/run-pg.ts`), real storage (the local disk, or the
 * bucket under `bun test/run-s3.ts`), real sharp in the real worker pool. What an upload leaves behind is looked at
 * from outside: rows through a connection of the test's own, files on the disk (or the bucket's listing), the temp
 * directory.
 */
import { afterAll, afterEach, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../../src/config'
import { localChangeFeed } from '../../../src/db/changes'
import { closeDatabase, openServiceDatabase, run } from '../../../src/db/client'
import { uploadIntents } from '../../../src/db/schema'
import { QuotaExceeded, RateLimited, StorageUnavailable, StorageUnwritable } from '../../../src/errors'
import type { UploadSource } from '../../../src/http/multipart'
import { sha256Hex } from '../../../src/lib/crypto'
import { tempUploadPath } from '../../../src/lib/received-file'
import { insertUser } from '../../../src/modules/auth/repository'
import { createBlockService } from '../../../src/modules/blocks/service'
import { createImageService } from '../../../src/modules/images/service'
import { createUploadPipeline } from '../../../src/modules/images/upload'
import { INTENT_GRACE_MS, instanceId, sweepIntents } from '../../../src/modules/images/upload/intents'
import type { Storage } from '../../../src/storage'
import { createConfiguredStorage } from '../../../src/storage/configured'
import { mediaPoolFor } from '../../../src/workers/media-pool'
import { makeImage } from '../../fixtures'
import { databaseEnv, dropDatabase, storageEnv } from '../../helpers'
import { fakeClassifier } from '../../moderation/fake-classifier'
import { queryEnv } from '../../other-connection'

// bun 1.4.5 applies test/setup.ts's setDefaultTimeout only to the first file of a multi-file run: say it here too.
const TIMEOUT = 60_000
setDefaultTimeout(TIMEOUT)

type Bytes = Uint8Array

/** One data directory, database and store, with pipelines built on them as instances of the service would. */
async function makeHost(limits: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-pipeline-'))
  const env = {
    ...storageEnv(),
    ...(await databaseEnv()),
    DATA_DIR: dataDir,
    JWT_SECRET: 'test-secret-'.padEnd(48, 'x'),
    ...limits,
  }
  const config = loadConfig(env)
  const db = await openServiceDatabase({ databaseUrl: config.database.url, sqlitePath: config.paths.sqliteFile })
  const storage = createConfiguredStorage(config)
  const media = mediaPoolFor(config)
  const changes = localChangeFeed(db)
  const user = await run(
    insertUser(db, { username: 'uploader', email: 'uploader@example.test', passwordHash: 'x', emailVerified: false }),
  )
  const counted = { metrics: 0, events: 0 }
  /** A pipeline as one instance of the service has it (its own admission), storing through `store`. */
  const pipeline = (store: Storage = storage) =>
    createUploadPipeline({
      db,
      config,
      storage: store,
      media,
      classifier: fakeClassifier('neutral').classifier,
      thresholds: config.nsfw.thresholds,
      blocks: createBlockService({ db, storage, maxDistance: 0, publicUrl: config.site.publicUrl }),
      images: createImageService({ db, config, storage, changes }),
      metrics: { uploaded: () => void counted.metrics++ },
      events: { emit: () => void counted.events++ },
    })
  const host = {
    env,
    db,
    config,
    storage,
    user,
    counted,
    pipeline,
    /** Uploads `files` (bytes, with `.png` names) as the account, through the API door. */
    upload: (files: Bytes[], through = pipeline()) =>
      through.upload(sourceOf(files), through.optionsFor('api', { user, ip: '203.0.113.7' })),
    /** Every row of the images table, through a connection of the test's own. */
    rows: () =>
      queryEnv<{ id: string; size: number; ext: string }>(env, 'SELECT id, size, ext FROM images ORDER BY id'),
    /** How many files the account's upload window has counted (0: no window row). */
    windowUsed: async () =>
      (await queryEnv<{ used: number }>(env, 'SELECT used FROM upload_windows WHERE key = $1', [`user:${user.id}`]))[0]
        ?.used ?? 0,
    /** The account's stored bytes and images as its counters keep them (what the quota reads). */
    counters: async () => {
      const [row] = await queryEnv<{ images: number; bytes: number }>(
        env,
        'SELECT COALESCE(SUM(images), 0) AS images, COALESCE(SUM(bytes), 0) AS bytes FROM image_counts WHERE owner_id = $1',
        [user.id],
      )
      return { images: Number(row!.images), bytes: Number(row!.bytes) }
    },
    /** What is left in the temp directory. */
    temps: () => readdirSync(config.paths.tmpDir),
    /** Every stored object: the files under DATA_DIR/files (`.partial` copies too), or the bucket's listing. */
    stored: async () => {
      if (config.storage.driver !== 'local') {
        const keys: string[] = []
        for await (const key of createConfiguredStorage(config).list()) keys.push(key)
        return keys.sort()
      }
      const root = join(dataDir, 'files')
      const names = readdirSync(root, { recursive: true, encoding: 'utf8' })
      return names.filter((name) => statSync(join(root, name)).isFile()).sort()
    },
    async stop() {
      await media.close()
      await closeDatabase(db)
      rmSync(dataDir, { recursive: true, force: true })
      await dropDatabase(env)
    },
  }
  hosts.push(host)
  return host
}

type Host = Awaited<ReturnType<typeof makeHost>>
const hosts: { stop(): Promise<void> }[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.stop()
}, TIMEOUT)
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const scratch = mkdtempSync(join(tmpdir(), 'imghost-pipeline-src-'))

/** `storage`, running `before` ahead of its `nth` put (counted from 1). */
function beforePut(storage: Storage, nth: number, before: () => Promise<void>): Storage {
  let puts = 0
  return {
    ...storage,
    put: async (key, path) => {
      if (++puts === nth) await before()
      return storage.put(key, path)
    },
  }
}

/** A door whose body is `files`: written to temp files under the limits the pipeline gives, as multipart would. */
function sourceOf(files: Bytes[]): UploadSource {
  return async (limitsFor) => {
    const { tmpDir } = await limitsFor({})
    return {
      fields: {},
      files: files.map((bytes, i) => {
        const path = tempUploadPath(tmpDir)
        writeFileSync(path, bytes)
        return { path, filename: `f${i}.png`, size: bytes.length, sha256: sha256Hex(bytes) }
      }),
    }
  }
}

const keysOf = (id: string) => [`originals/${id}.png`, `thumbs/${id}.webp`]

/** A store whose originals' puts wait until `n` of them have arrived: every upload has passed its early refusals. */
function meetingStore(storage: Storage, n: number): Storage {
  let arrived = 0
  let meet: () => void
  const met = new Promise<void>((resolve) => {
    meet = resolve
  })
  return {
    ...storage,
    async put(key, path) {
      if (key.startsWith('originals/') && ++arrived === n) meet()
      if (key.startsWith('originals/')) await met
      return storage.put(key, path)
    },
  }
}

/**
 * Two uploads at once through two instances (pipelines with an admission each: neither sees the other's hold) that
 * meet before storing, so both have passed their early refusals: the commit alone can tell them apart.
 */
async function race(host: Host, a: Bytes, b: Bytes) {
  const store = meetingStore(host.storage, 2)
  const results = await Promise.allSettled([
    host.upload([a], host.pipeline(store)),
    host.upload([b], host.pipeline(store)),
  ])
  const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
  const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
  expect(won).toHaveLength(1)
  expect(lost).toHaveLength(1)
  return { won: won[0]!, lost: lost[0] }
}

/**
 * What the host holds is exactly the images `ids` (rows, originals, thumbnails, nothing half-copied), no temp file,
 * and a window and counters that counted each of them once.
 */
async function expectExactly(host: Host, ids: string[]) {
  const rows = await host.rows()
  expect(rows.map((r) => r.id)).toEqual(ids.toSorted())
  expect(await host.stored()).toEqual(ids.flatMap(keysOf).sort())
  expect(host.temps()).toEqual([])
  expect(await host.windowUsed()).toBe(ids.length)
  expect(await host.counters()).toEqual({
    images: ids.length,
    bytes: rows.reduce((sum, r) => sum + Number(r.size), 0),
  })
}

const idsOf = (...results: { rows: { id: string }[] }[]) => results.flatMap((r) => r.rows.map((row) => row.id))

describe('upload pipeline without a server', () => {
  test('a good batch is stored and committed: rows, originals and thumbnails, the window and quota counted once', async () => {
    const host = await makeHost()
    const first = await host.upload([await makeImage('png', 64, 48, 1), await makeImage('png', 40, 30, 2)])
    const second = await host.upload([await makeImage('png', 50, 50, 3)])
    await expectExactly(host, idsOf(first, second))
    expect(host.counted).toEqual({ metrics: 2, events: 3 })
  })

  test('a file refused at the inspect step leaves no temp file, no stored key and no row', async () => {
    const host = await makeHost()
    const upload = host.upload([await makeImage('png', 32, 32, 4), new TextEncoder().encode('not an image')])
    await expect(upload).rejects.toThrow('f1.png:')
    await expectExactly(host, [])
  })

  test('a put that fails at the store step removes what the upload already stored', async () => {
    const host = await makeHost()
    // The second image's thumbnail: the first image and the second's original are in the store by then.
    const failing = beforePut(host.storage, 4, async () => {
      throw new Error('disk gone (test)')
    })
    const upload = host.upload(
      [await makeImage('png', 32, 32, 5), await makeImage('png', 32, 32, 6)],
      host.pipeline(failing),
    )
    await expect(upload).rejects.toBeInstanceOf(StorageUnwritable)
    await expectExactly(host, [])
    expect(host.counted).toEqual({ metrics: 0, events: 0 })
  })

  test('a sweep that takes an upload intent before its commit: 503, no row, no file, no intent left', async () => {
    const host = await makeHost()
    // Before the thumbnail: the original and its intent are there, as after a crash, and a sweep finds them.
    const sweptMidway = beforePut(host.storage, 2, async () => {
      const instance = instanceId(host.config.paths.dataDir)
      expect(await sweepIntents(host.db, host.storage, { instance, startedAt: Date.now() + 1 })).toBe(1)
    })
    const upload = host.upload([await makeImage('png', 32, 32, 11)], host.pipeline(sweptMidway))
    await expect(upload).rejects.toBeInstanceOf(StorageUnavailable)
    await expectExactly(host, [])
    expect(await queryEnv(host.env, 'SELECT id FROM upload_intents')).toEqual([])
  })

  test('another instance starting spares an upload in progress here; an intent past the grace goes, whoever made it', async () => {
    const host = await makeHost()
    const otherStart = () => sweepIntents(host.db, host.storage, { instance: 'another', startedAt: Date.now() + 1 })
    // Another data directory's instance starts on the same database while this upload is between its two puts.
    const spared = beforePut(host.storage, 2, async () => {
      expect(await otherStart()).toBe(0)
    })
    const kept = await host.upload([await makeImage('png', 32, 32, 12)], host.pipeline(spared))

    // An intent older than INTENT_GRACE_MS is dead whichever instance made it (one that never came back).
    const aged = beforePut(host.storage, 2, async () => {
      await host.db.update(uploadIntents).set({ createdAt: new Date(Date.now() - INTENT_GRACE_MS - 60_000) })
      expect(await otherStart()).toBe(1)
    })
    const lost = host.upload([await makeImage('png', 32, 32, 13)], host.pipeline(aged))
    await expect(lost).rejects.toBeInstanceOf(StorageUnavailable)
    await expectExactly(host, idsOf(kept))
  })

  test('two instances racing the last slot of the window: both pass the early check, the commit takes one', async () => {
    const host = await makeHost({ UPLOADS_PER_HOUR: '2' })
    const before = await host.upload([await makeImage('png', 32, 32, 7)])
    const { won, lost } = await race(host, await makeImage('png', 32, 32, 8), await makeImage('png', 32, 32, 9))
    expect(lost).toBeInstanceOf(RateLimited)
    await expectExactly(host, idsOf(before, won))
    expect(host.counted).toEqual({ metrics: 2, events: 2 })
  })

  test('two instances racing the last bytes of the quota: both pass the early check, the commit takes one', async () => {
    const bytes = await makeImage('png', 48, 48, 10)
    // The size the pipeline stores for these bytes, learnt on a host without a quota.
    const probe = await makeHost()
    const size = (await probe.upload([bytes])).rows[0]!.size
    const host = await makeHost({ UNVERIFIED_STORAGE_LIMIT: String(Math.floor(size * 1.5)) })
    const { won, lost } = await race(host, bytes, bytes)
    expect(lost).toBeInstanceOf(QuotaExceeded)
    await expectExactly(host, idsOf(won))
  })
})
