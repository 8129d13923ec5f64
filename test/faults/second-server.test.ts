/**
 * Fault: a second server started on the same DATA_DIR (issue 17: it started silently, and its startup sweep deleted
 * the first one's in-flight temp files, failing 4 uploads). Now it exits 1 with a message naming the directory,
 * touching nothing, while the first keeps serving and finishes an upload that was half-sent meanwhile; `restore` is
 * refused the same way. The lock dies with its process: after kill -9 a new server starts at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeImage, uploadForm } from '../fixtures'
import { databaseEnv, dropDatabase, startTestServer, type TestServer, userWithKey } from '../helpers'
import { eventually } from './support'

const TIMEOUT = 60_000
const ROOT = join(import.meta.dir, '../..')
const SECRET = 'second-server-test-secret-'.padEnd(48, 'x')

let t: TestServer
const scratch = mkdtempSync(join(tmpdir(), 'imghost-second-'))
beforeAll(async () => {
  t = await startTestServer()
}, TIMEOUT)
afterAll(async () => {
  await t?.stop()
  rmSync(scratch, { recursive: true, force: true })
  for (const [dir, env] of databases) if (dir !== t?.dataDir) await dropDatabase(env)
}, TIMEOUT)

/**
 * On PostgreSQL runs, the database of a data directory with the keys required beside it (the suite's own DATABASE_URL
 * is another database): the test server's for its directory, a fresh one for any other. Nothing on SQLite.
 */
const databases = new Map<string, Record<string, string>>()
async function databaseOf(dataDir: string): Promise<Record<string, string>> {
  if (!process.env.PG_TEST_URL) return {}
  if (!databases.has(dataDir))
    databases.set(
      dataDir,
      dataDir === t.dataDir
        ? Object.fromEntries(['DATABASE_URL', 'VARIANT_SECRET', 'TOTP_KEY'].map((name) => [name, t.env[name]!]))
        : await databaseEnv(),
    )
  return databases.get(dataDir)!
}

/** The environment of a process on `dataDir` (its database, on PostgreSQL runs). */
const processEnv = async (dataDir: string) => ({
  ...process.env,
  ...(await databaseOf(dataDir)),
  DATA_DIR: dataDir,
  PORT: '0',
  JWT_SECRET: SECRET,
  LOG_REQUESTS: 'false',
  STORAGE: 'local',
})

/** Runs `bun <script> ...args` on `dataDir`; kills it if it is still running after `ms` (a server that did start). */
async function run(args: string[], dataDir: string, ms = 30_000) {
  const proc = Bun.spawn([process.execPath, ...args], {
    cwd: ROOT,
    env: await processEnv(dataDir),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill(9), ms)
  const code = await proc.exited
  clearTimeout(timer)
  return { code, out: await new Response(proc.stdout).text(), err: await new Response(proc.stderr).text() }
}

/** Starts a server process on `dataDir` and resolves once it listens. */
async function serverProcess(dataDir: string) {
  const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: await processEnv(dataDir),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const reader = proc.stdout.getReader()
  let seen = ''
  while (!seen.includes('"listening"')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`server exited before listening: ${seen} ${await new Response(proc.stderr).text()}`)
    seen += new TextDecoder().decode(value)
  }
  return proc
}

/** An HTTP request over a raw socket, its body sent in two parts: the second only once `release` resolves. */
async function twoPartRequest(
  url: string,
  path: string,
  headers: Record<string, string>,
  body: Uint8Array,
  release: Promise<void>,
) {
  const { hostname, port } = new URL(url)
  let received = ''
  let closed!: () => void
  const ended = new Promise<void>((resolve) => (closed = resolve))
  const socket = await Bun.connect({
    hostname: hostname === 'localhost' ? '127.0.0.1' : hostname,
    port: Number(port),
    socket: {
      data(_s, chunk) {
        received += new TextDecoder().decode(chunk)
      },
      close: () => closed(),
      error: () => closed(),
    },
  })
  const head = [
    `POST ${path} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    `Content-Length: ${body.length}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ].join('\r\n')
  const half = body.length >> 1
  socket.write(new TextEncoder().encode(head))
  socket.write(body.subarray(0, half))
  socket.flush()
  await release
  socket.write(body.subarray(half))
  socket.flush()
  await ended
  const status = Number(received.split(' ')[1])
  return { status, body: JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) }
}

describe('one server per DATA_DIR', () => {
  test(
    'a second server exits 1 naming the directory; the first finishes its in-flight upload; restore is refused',
    async () => {
      const owner = await userWithKey(t)
      const bytes = await makeImage('png', 300, 200, 11)
      const form = new Response(uploadForm([{ bytes, name: 'in-flight.png' }]))
      const contentType = form.headers.get('content-type')!
      const body = new Uint8Array(await form.arrayBuffer())
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      const pending = twoPartRequest(
        t.url,
        '/api/v1/upload',
        { 'content-type': contentType, ...owner.keyHeader },
        body,
        released,
      )

      // The upload is under way: its temp file exists.
      const tmp = join(t.dataDir, 'tmp')
      await eventually(() => readdirSync(tmp).length > 0, 10_000, 'the upload temp file')
      const inFlight = readdirSync(tmp)

      const second = await run(['src/index.ts'], t.dataDir)
      expect(second.code).toBe(1)
      expect(second.err).toContain(`DATA_DIR ${t.dataDir}`)
      expect(second.err).toContain('in use by a running imghost server')
      expect(second.out).not.toContain('listening')
      // It touched nothing: the in-flight temp file is still there.
      expect(readdirSync(tmp)).toEqual(inFlight)

      const restore = await run(['src/cli.ts', 'restore', join(scratch, 'no-such-backup')], t.dataDir)
      expect(restore.code).toBe(1)
      expect(restore.err).toContain('restore refused')
      expect(restore.err).toContain(`DATA_DIR ${t.dataDir}`)

      release()
      const up = await pending
      expect(up.status).toBe(201)
      const served = await t.fetch(`/cdn/${up.body.id}.png`)
      expect(served.status).toBe(200)
      expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes)
      expect((await t.fetch('/healthz')).status).toBe(200)
      // CLI commands other than restore still run beside the server.
      expect((await run(['src/cli.ts', 'verify-email', owner.user.username], t.dataDir)).code).toBe(0)
    },
    TIMEOUT,
  )

  test(
    'the lock goes with its process, even on kill -9: a new server starts on the directory at once',
    async () => {
      const dir = join(scratch, 'killed')
      const first = await serverProcess(dir)
      first.kill(9)
      await first.exited
      const next = await serverProcess(dir)
      next.kill('SIGTERM')
      expect(await next.exited).toBe(0)
    },
    TIMEOUT,
  )
})
