import { expect } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { loadConfig } from '../src/config'
import { byEngine, type Db } from '../src/db/client'
import { type ServerOverrides, startServer } from '../src/server'
import { noModel } from './moderation/fake-classifier'

/** A port nobody listens on right now (the OS picks it). */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export interface TestServer {
  url: string
  dataDir: string
  /** The environment the server's config was read from (DATA_DIR, PORT, the storage variables...). */
  env: Record<string, string>
  server: Awaited<ReturnType<typeof startServer>>
  /** fetch relative to the server's base URL */
  fetch(path: string, init?: RequestInit): Promise<Response>
  json<T = any>(path: string, init?: RequestInit): Promise<{ status: number; body: T; headers: Headers }>
  stop(): Promise<void>
}

const STORAGE_VARIABLES = [
  'STORAGE',
  'S3_ENDPOINT',
  'S3_BUCKET',
  'S3_REGION',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'S3_SERVE',
]

/**
 * With STORAGE=s3 in the environment (`npm run test:s3`), every test server stores in that bucket, each under a
 * prefix of its own so no test sees another's objects. Otherwise: nothing, and files go to the data directory.
 */
export function storageEnv(): Record<string, string> {
  if (process.env.STORAGE !== 's3') return {}
  const env: Record<string, string> = {}
  for (const name of STORAGE_VARIABLES) if (process.env[name]) env[name] = process.env[name]!
  return { ...env, S3_PREFIX: `t-${crypto.randomUUID()}/` }
}

/** A client per admin URL, kept for the process: each test server's database is made through it. */
const pgAdmins = new Map<string, SQL>()

/**
 * With PG_TEST_URL in the environment (`npm run test:pg`, test/run-pg.ts), every test server gets a database of its
 * own, copied from the migrated template PG_TEST_TEMPLATE. Copies may run at once: only a connection to the template
 * would make it busy, and nothing connects to it once it is migrated. Otherwise: nothing, and the server uses SQLite.
 */
export async function databaseEnv(): Promise<Record<string, string>> {
  const adminUrl = process.env.PG_TEST_URL
  if (!adminUrl) return {}
  const admin = pgAdmins.get(adminUrl) ?? new SQL(adminUrl)
  pgAdmins.set(adminUrl, admin)
  const name = `t_${crypto.randomUUID().replaceAll('-', '')}`
  await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${process.env.PG_TEST_TEMPLATE ?? 'imghost_template'}"`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  // Instances on one database share their keys (config.ts requires them with DATABASE_URL).
  return {
    DATABASE_URL: url.toString(),
    VARIANT_SECRET: 'test-variant-secret'.padEnd(48, 'x'),
    TOTP_KEY: 'test-totp-key'.padEnd(48, 'x'),
  }
}

/** Drops a test server's own database (PostgreSQL runs): hundreds of copies of the template would fill the disk. */
export async function dropDatabase(env: Record<string, string>) {
  const adminUrl = process.env.PG_TEST_URL
  if (!adminUrl || !env.DATABASE_URL) return
  const name = new URL(env.DATABASE_URL).pathname.slice(1)
  await pgAdmins.get(adminUrl)?.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
}

/**
 * Starts the real app on a random port with a fresh temp data directory. Its classifier finds everything neutral
 * unless a test passes one: a real model per server would cost a worker and seconds of CPU each, and only the
 * scanning tests are about verdicts.
 *
 * Where the real nsfwjs model runs:
 * - `test/moderation/classifier.test.ts`: the model alone (`sharedClassifier()`), its verdicts on images the tests make;
 * - `test/images/web-scan.test.ts`: the servers of its first two describes (`sharedClassifier()`), uploads scanned by it;
 * - `test/moderation/limits.test.ts`: a model of its own, for its timeout, queue and close (no verdicts);
 * - `test/moderation/idle-unload.test.ts`: models of its own, loaded with the first scan and unloaded when idle, and a
 *   server whose classifier is built from its configuration (`NSFW_IDLE_UNLOAD_SECONDS=1`), verdicts after an unload;
 * - servers run as processes, as in production, start it as production does: the single binary
 *   (`test/ops/binary.test.ts`, which scans a web upload with it) and `bun src/index.ts` (`test/http/shutdown.test.ts`,
 *   `test/faults/second-server.test.ts`, `test/config/`, `test/storage/config.test.ts`; no verdict asserted).
 * Every other server gets the neutral fake (or a fake of its own: `test/moderation/fake-classifier.ts`).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  overrides: ServerOverrides = {},
): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-test-'))
  // A database of its own on PostgreSQL runs, unless the test gives one (instances sharing a database).
  const ownDatabase = env.DATABASE_URL ? {} : await databaseEnv()
  // A test that must know the address before the server starts (a redirect URI to register) passes its own PORT.
  const port = env.PORT ? Number(env.PORT) : freePort()
  const fullEnv = {
    ...storageEnv(),
    ...ownDatabase,
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_REQUESTS: 'false',
    JWT_SECRET: 'test-secret-'.padEnd(48, 'x'),
    ...env,
  }
  const config = loadConfig(fullEnv)
  const server = await startServer(config, { ...noModel(), ...overrides })
  const url = `http://localhost:${port}`
  const doFetch = (path: string, init?: RequestInit) => fetch(url + path, init)
  return {
    url,
    dataDir: config.paths.dataDir,
    env: fullEnv,
    server,
    fetch: doFetch,
    async json(path, init) {
      const res = await doFetch(path, init)
      const text = await res.text()
      let body: any
      try {
        body = JSON.parse(text)
      } catch {
        throw new Error(`Expected JSON from ${path}, got ${res.status}: ${text.slice(0, 200)}`)
      }
      return { status: res.status, body, headers: res.headers }
    },
    async stop() {
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
      await dropDatabase(ownDatabase)
    },
  }
}

/**
 * Two instances of the app with one environment, on one database of their own (PostgreSQL runs: instances sharing
 * it); `stop` stops both, then drops the database.
 */
export async function startInstancePair(env: Record<string, string>, overrides: ServerOverrides = {}) {
  const database = await databaseEnv()
  const pair = [
    await startTestServer({ ...database, ...env }, overrides),
    await startTestServer({ ...database, ...env }, overrides),
  ] as const
  return {
    pair,
    async stop() {
      for (const t of pair) await t.stop()
      await dropDatabase(database)
    },
  }
}

/** Every key in the server's storage (local files or bucket objects), sorted: tests look through the interface. */
export async function storedKeys(t: TestServer): Promise<string[]> {
  const keys: string[] = []
  for await (const key of t.server.deps.storage.list()) keys.push(key)
  return keys.sort()
}

export const jsonBody = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

let counter = 0
/** Registers a fresh account and returns its token and user. */
export async function registerUser(t: TestServer, name = `user${Date.now().toString(36)}${counter++}`) {
  const res = await t.json('/api/auth/register', {
    method: 'POST',
    ...jsonBody({ username: name, email: `${name}@example.com`, password: 'correct horse battery' }),
  })
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`)
  return {
    token: res.body.token as string,
    user: res.body.user,
    password: 'correct horse battery',
    bearer: { authorization: `Bearer ${res.body.token}` },
  }
}

/** Registers an account and creates an API key for it. */
export async function userWithKey(t: TestServer, name?: string) {
  const account = await registerUser(t, name)
  const res = await t.json('/api/keys', { method: 'POST', ...jsonBody({ name: 'test' }, account.bearer) })
  if (res.status !== 201) throw new Error(`key failed: ${res.status} ${JSON.stringify(res.body)}`)
  return { ...account, apiKey: res.body.apiKey as string, keyHeader: { 'x-api-key': res.body.apiKey as string } }
}

/** Promotes an account to admin directly in the database (there is no API for the first admin). */
export async function makeAdmin(t: TestServer, userId: number) {
  await t.server.services.admin.updateUser(userId, { role: 'admin' })
}

/**
 * Runs `work` (an attack) while /healthz is asked every 50 ms, and asserts every answer came in under `boundMs`
 * (generous, so it cannot flake; the tight figure lives in the bench): the server keeps answering while it is attacked.
 */
export async function whileHealthy<T>(t: TestServer, work: () => Promise<T>, boundMs = 2000): Promise<T> {
  let done = false
  const slowest = { ms: 0, answers: 0 }
  const probe = (async () => {
    while (!done) {
      const started = performance.now()
      const res = await t.fetch('/healthz')
      await res.arrayBuffer()
      expect(res.status).toBe(200)
      slowest.ms = Math.max(slowest.ms, performance.now() - started)
      slowest.answers++
      await Bun.sleep(50)
    }
  })()
  try {
    return await work()
  } finally {
    done = true
    await probe
    expect(slowest.answers).toBeGreaterThan(0)
    expect(slowest.ms).toBeLessThan(boundMs)
  }
}

/** Whether a process with this pid exists (signal 0 tests without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * A clock to pass as the server's `now` (ServerOverrides): it runs with real time until the test stops it with `set`
 * (or from the start, when given one), so a test can stand on a window's or an expiry's last millisecond, or step past
 * its end, without waiting. It drives every rate window and image expiry.
 */
export function testClock(start?: number) {
  let stoppedAt: number | null = start ?? null
  return {
    now: () => stoppedAt ?? Date.now(),
    /** Stops the clock at `ms` (epoch milliseconds). */
    set(ms: number) {
      stoppedAt = ms
    },
    /** Lets it run with real time again. */
    reset() {
      stoppedAt = null
    },
  }
}
export type TestClock = ReturnType<typeof testClock>

/**
 * Polls until `check` holds, for an event the test cannot await directly; the bound is generous on purpose (it only
 * keeps a broken rule from hanging the suite, it is no latency figure).
 */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 30_000, what = 'condition') {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

/**
 * Runs `bun src/cli.ts ...args` with exactly `env`, waited for asynchronously: a test server in this process keeps
 * serving meanwhile (a synchronous wait would freeze it, with any transaction it has open and the lock the CLI needs).
 */
export async function runCli(args: string[], env: Record<string, string | undefined>) {
  const root = join(import.meta.dir, '..')
  const proc = Bun.spawn([process.execPath, join(root, 'src/cli.ts'), ...args], {
    env,
    cwd: root,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  return { code, out, err }
}

/** A SQLite server's database under its own type, for tests of SQLite's own settings and files (throws on PostgreSQL). */
export const sqliteOf = (db: Db) =>
  byEngine(db, {
    sqlite: (sqlite) => sqlite,
    pg: () => {
      throw new Error('a SQLite-only test ran on PostgreSQL')
    },
  })
