import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { S3Client } from 'bun'
import { RETRY_DELAYS_MS } from '../../src/storage/s3'
import { makeImage, makeNoisePng, uploadForm } from '../fixtures'
import { dropDatabase, storedKeys, type TestServer, userWithKey } from '../helpers'
import { startServer } from '../pages/support'
import { S3_TEST_CREDENTIALS, type S3TestServer, spawnS3Server } from '../s3-server'

const root = join(import.meta.dir, '..', '..')
const PREFIX = 'migrated/'
let s3: S3TestServer
let bucket: S3Client
let t: TestServer
let uploaded: { id: string; url: string; thumbnail: string }[]

beforeAll(async () => {
  s3 = await spawnS3Server()
  bucket = new S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, ...S3_TEST_CREDENTIALS })
  // The server starts on the local disk, whatever the suite's storage is.
  t = await startServer({ STORAGE: 'local' })
  const user = await userWithKey(t)
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm([
      { bytes: await makeImage('png', 40, 40, 1) },
      { bytes: await makeImage('jpeg', 80, 60, 2), name: 'b.jpg' },
      { bytes: await makeNoisePng(900) },
    ]),
  })
  expect(res.status).toBe(201)
  uploaded = res.body.images
})
let stopped = false
afterAll(async () => {
  if (!stopped) await t.server.stop()
  rmSync(t.dataDir, { recursive: true, force: true })
  await dropDatabase(t.env)
  await s3.kill()
  rmSync(s3.dir, { recursive: true, force: true })
})

/**
 * On PostgreSQL runs, the test server's database and the keys required beside it: what the CLI and the server started
 * again on its data directory must use (the suite's own DATABASE_URL is another database).
 */
const sameDatabase = (): Record<string, string> =>
  t.env.DATABASE_URL
    ? Object.fromEntries(
        ['DATABASE_URL', 'JWT_SECRET', 'VARIANT_SECRET', 'TOTP_KEY'].map((name) => [name, t.env[name]!]),
      )
    : {}

function cli(env: Record<string, string>, ...args: string[]) {
  const { STORAGE: _storage, ...s3env } = s3.env
  const proc = Bun.spawnSync([process.execPath, join(root, 'src/cli.ts'), ...args], {
    env: {
      ...process.env,
      ...sameDatabase(),
      STORAGE: 'local',
      ...s3env,
      S3_PREFIX: PREFIX,
      DATA_DIR: t.dataDir,
      ...env,
    },
    cwd: root,
  })
  return { code: proc.exitCode, out: proc.stdout.toString(), err: proc.stderr.toString() }
}

const localFiles = async () =>
  (await storedKeys(t)).map((key) => ({ key, size: Bun.file(join(t.dataDir, 'files', key)).size }))
async function bucketObjects(prefix = PREFIX) {
  const listed = await bucket.list({ prefix })
  return (listed.contents ?? [])
    .map((o) => ({ key: o.key.slice(prefix.length), size: o.size }))
    .sort((a, b) => (a.key < b.key ? -1 : 1))
}

describe('cli migrate-storage', () => {
  test('copies every file into the bucket with its size, then says to switch STORAGE=s3', async () => {
    const run = cli({}, 'migrate-storage')
    expect(run.err).toBe('')
    expect(run.code).toBe(0)
    expect(run.out).toContain('6 files: 6 copied')
    expect(run.out).toContain('STORAGE=s3')
    expect(await bucketObjects()).toEqual(await localFiles())
    // The local files stay until the operator removes them.
    expect((await localFiles()).length).toBe(6)
  })

  test('is resumable: what is there with the same size is skipped; what is missing or differs is copied again', async () => {
    expect(cli({}, 'migrate-storage').out).toContain('6 files: 0 copied (0.0 MB), 6 already in the bucket, 0 failed')
    const [first, second] = await localFiles()
    await bucket.delete(PREFIX + first.key)
    await bucket.write(PREFIX + second.key, 'truncated') // an interrupted copy of an older tool, say
    await s3.clearRequests()
    const run = cli({}, 'migrate-storage')
    expect(run.out).toContain('6 files: 2 copied')
    expect(run.out).toContain('4 already in the bucket, 0 failed')
    expect(await bucketObjects()).toEqual(await localFiles())
    const puts = (await s3.requests()).filter((r) => r.method === 'PUT').map((r) => r.path)
    expect(puts.sort()).toEqual([`/${s3.bucket}/${PREFIX}${first.key}`, `/${s3.bucket}/${PREFIX}${second.key}`].sort())
  })

  test('a copy that fails (the bucket answers 503 past every retry): exit 2 naming the files; a rerun completes them', async () => {
    const prefix = 'failing/' // an empty prefix of its own, so every file needs a copy
    const local = await localFiles()
    // The next S3 requests answer 503 SlowDown: the first request of each of the four files copied in parallel, and
    // every retry of it, so those four fail and the rest copy.
    const attempts = RETRY_DELAYS_MS.length + 1
    await s3.failNext(4 * attempts)
    const failing = cli({ S3_PREFIX: prefix }, 'migrate-storage')
    await s3.failNext(0)
    expect(failing.code).toBe(2)
    const failed = [...failing.err.matchAll(/^failed: (\S+): /gm)].map((m) => m[1]).sort()
    expect(failed.length, failing.err).toBeGreaterThan(0)
    expect(failed.length).toBeLessThan(local.length)
    expect(failing.err).toContain(`failed after ${attempts} attempt(s)`)
    expect(failing.out).toContain(`${local.length} files: ${local.length - failed.length} copied`)
    expect(failing.out).toContain(`0 already in the bucket, ${failed.length} failed`)
    expect(failing.out).toContain('Run migrate-storage again')
    expect(failing.out).not.toContain('STORAGE=s3 and the same')
    // What failed is not in the bucket; everything else is, with its size.
    expect(await bucketObjects(prefix)).toEqual(local.filter((f) => !failed.includes(f.key)))

    const rerun = cli({ S3_PREFIX: prefix }, 'migrate-storage')
    expect(rerun.err).toBe('')
    expect(rerun.code).toBe(0)
    expect(rerun.out).toContain(`${local.length} files: ${failed.length} copied`)
    expect(rerun.out).toContain(`${local.length - failed.length} already in the bucket, 0 failed`)
    expect(await bucketObjects(prefix)).toEqual(local)
  }, 30_000)

  test('after the switch the same data directory serves every image from the bucket, and check finds nothing missing', async () => {
    const before = await Promise.all(
      uploaded.map(async (i) => new Uint8Array(await (await t.fetch(new URL(i.url).pathname)).arrayBuffer())),
    )
    await t.server.stop()
    stopped = true
    const onS3 = await startServer({ ...s3.env, S3_PREFIX: PREFIX, DATA_DIR: t.dataDir, ...sameDatabase() })
    try {
      for (const [i, image] of uploaded.entries()) {
        const res = await onS3.fetch(new URL(image.url).pathname)
        expect(res.status).toBe(200)
        expect(new Uint8Array(await res.arrayBuffer())).toEqual(before[i])
        expect((await onS3.fetch(new URL(image.thumbnail).pathname)).status).toBe(200)
      }
    } finally {
      await onS3.server.stop()
    }
    const check = cli({ STORAGE: 's3' }, 'check')
    expect(check.code).toBe(0)
    expect(JSON.parse(check.out)).toMatchObject({
      images: 3,
      missingOriginals: [],
      missingThumbnails: [],
      strayFiles: [],
    })
  })

  test('without the bucket variables it stops, naming the one missing', () => {
    const run = cli({ S3_BUCKET: '' }, 'migrate-storage')
    expect(run.code).toBe(1)
    expect(run.err).toContain('S3_BUCKET')
  })
})
