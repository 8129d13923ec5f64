/**
 * The server as production runs it: `bun src/index.ts` spawned on a data directory of its own and an OS-chosen port,
 * for the tests of what only a real process shows (its signals, its exit, what a kill -9 leaves).
 */
import { afterAll } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseEnv, dropDatabase, jsonBody, storageEnv } from './helpers'

const ROOT = join(import.meta.dir, '..')
const dirs: string[] = []
const procs: Bun.Subprocess[] = []
const envs: Record<string, string>[] = []
afterAll(async () => {
  for (const proc of procs) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  for (const env of envs) await dropDatabase(env)
})

/** Resolves with `promise`, or rejects after `ms` naming what it waited for: no wait here is unbounded. */
export function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: Timer | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
    }),
  ])
}

/** Polls `check` every 50 ms until it returns true or `ms` pass; returns whether it did. */
export async function eventually(ms: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await Bun.sleep(50)
  }
}

export interface Spawned {
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  base: string
  port: number
  env: Record<string, string>
  dataDir: string
  /** Everything the process wrote so far, stdout and stderr. */
  output(): string
}

/** The environment of a spawned server on a fresh data directory (and database, on PostgreSQL runs). */
export async function serverEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-spawned-'))
  dirs.push(dataDir)
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? dataDir,
    ...storageEnv(),
    // PostgreSQL runs: a database of its own (dropped after the tests).
    ...(await databaseEnv()),
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_REQUESTS: 'false',
    JWT_SECRET: 'spawned-test-secret-'.padEnd(48, 'x'),
    ...extra,
  }
  envs.push(env)
  return env
}

/** Starts `bun src/index.ts` with `env` (serverEnv's, or a fresh one) and waits until it listens. */
export async function spawnServer(env?: Record<string, string>): Promise<Spawned> {
  const serverEnvironment = env ?? (await serverEnv())
  const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: serverEnvironment,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  procs.push(proc)
  let text = ''
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
  }
  void drain(proc.stdout)
  void drain(proc.stderr)
  let port = 0
  const up = await eventually(30_000, () => {
    if (proc.exitCode !== null) return true
    const line = text.split('\n').find((l) => l.includes('"msg":"listening"'))
    if (line) port = JSON.parse(line).port
    return port > 0
  })
  if (!up || !port) throw new Error(`server did not start:\n${text}`)
  return {
    proc,
    base: `http://127.0.0.1:${port}`,
    port,
    env: serverEnvironment,
    dataDir: serverEnvironment.DATA_DIR!,
    output: () => text,
  }
}

/** An account with an API key, made through the API of the spawned server. */
export async function apiKey(s: Spawned): Promise<string> {
  const name = `sp${Date.now().toString(36)}${Math.floor(Math.random() * 1000)}`
  const reg = await fetch(`${s.base}/api/auth/register`, {
    method: 'POST',
    ...jsonBody({ username: name, email: `${name}@example.com`, password: 'correct horse battery' }),
  })
  if (reg.status !== 201) throw new Error(`register answered ${reg.status}`)
  const { token } = (await reg.json()) as { token: string }
  const key = await fetch(`${s.base}/api/keys`, {
    method: 'POST',
    ...jsonBody({ name: 'spawned' }, { authorization: `Bearer ${token}` }),
  })
  if (key.status !== 201) throw new Error(`key creation answered ${key.status}`)
  return ((await key.json()) as { apiKey: string }).apiKey
}

/** Whether a fresh TCP connection to the port is accepted (false once nothing listens). */
export function accepts(port: number): Promise<boolean> {
  return within(
    5000,
    'a connection attempt',
    new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port })
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    }),
  )
}
