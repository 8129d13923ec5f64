import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { BUN, freePort, spawnLogged, stopChild, waitHealthy } from './proc'

/** The token /metrics asks of every instance the bench starts. */
export const METRICS_TOKEN = 'bench-metrics-token'

export const ADMIN = { username: 'benchadmin', email: 'bench@example.com', password: 'bench-password-123' }

export interface AppProcess {
  child: Subprocess
  pid: number
  port: number
  url: string
  dataDir: string
  /** Milliseconds from spawn to the first 200 on /healthz. */
  startMs: number
  stop(): Promise<void>
}

/**
 * The environment the bench runs the service (and its CLI) with: `dataDir`, the bench admin, and every limit that would
 * throttle a benchmark raised; then BENCH_APP_ENV, then `extra`.
 */
export function appEnv(dataDir: string, port: number, extra: Record<string, string> = {}): Record<string, string> {
  const url = `http://127.0.0.1:${port}`
  const MB = 1024 * 1024
  return {
    DATA_DIR: dataDir,
    PORT: String(port),
    PUBLIC_URL: url,
    LOG_REQUESTS: 'false',
    JWT_SECRET: 'bench-secret-'.padEnd(48, 'x'),
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    METRICS_TOKEN,
    UPLOADS_PER_HOUR: '10000000',
    ANON_UPLOADS_PER_WINDOW: '10000000',
    ANON_MAX_FILE_SIZE: String(100 * MB),
    MAX_FILE_SIZE: String(100 * MB),
    GLOBAL_RATE_LIMIT: '1000000000',
    // The variants group makes signed sizes as fast as the pool allows.
    VARIANTS_MADE_PER_SECOND: '1000000',
    // The login group fails on purpose, more often than the throttles allow.
    LOGIN_FAILURES_PER_ACCOUNT: '1000000',
    LOGIN_FAILURES_PER_IP: '1000000',
    // Experiments: BENCH_APP_ENV="STRIP_METADATA=none,FOO=bar" reaches every instance of the service.
    ...Object.fromEntries(
      (process.env.BENCH_APP_ENV ?? '')
        .split(',')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    ),
    ...extra,
  }
}

/**
 * Starts the real service (`bun src/index.ts`) as its own process with a data directory of the bench's choosing and
 * the environment of `appEnv`. `preload`: a module Bun loads into the process first (bench/lib/server-probe.ts). Returns
 * once /healthz answers 200.
 */
export async function startApp(opts: {
  dataDir: string
  log: string
  env?: Record<string, string>
  preload?: string
  /** How long it may take to answer /healthz (default 30 s). */
  startTimeoutMs?: number
}): Promise<AppProcess> {
  const port = freePort()
  const url = `http://127.0.0.1:${port}`
  const env = appEnv(opts.dataDir, port, opts.env)
  const since = performance.now()
  const preload = opts.preload ? ['--preload', opts.preload] : []
  const child = spawnLogged([BUN, ...preload, 'src/index.ts'], { env, log: opts.log })
  const startMs = await waitHealthy(`${url}/healthz`, since, opts.startTimeoutMs ?? 30_000, child)
  return { child, pid: child.pid, port, url, dataDir: opts.dataDir, startMs, stop: () => stopChild(child, 10_000) }
}

/** Logs an account in and creates an API key for it. */
export async function accountCredentials(
  url: string,
  username: string,
  password: string,
): Promise<{ jwt: string; apiKey: string }> {
  const login = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  })
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${await login.text()}`)
  const { token } = (await login.json()) as { token: string }
  const key = await fetch(`${url}/api/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'bench' }),
  })
  if (key.status !== 201) throw new Error(`key creation failed: ${key.status} ${await key.text()}`)
  const { apiKey } = (await key.json()) as { apiKey: string }
  return { jwt: token, apiKey }
}

/** The bench admin's credentials: admins are exempt from upload windows and size limits. */
export const adminCredentials = (url: string) => accountCredentials(url, ADMIN.username, ADMIN.password)

export interface Uploaded {
  id: string
  url: string
  thumbnail: string
}

/** One upload request; resolves to the parsed body or throws with the status. */
export async function upload(
  url: string,
  path: '/api/v1/upload' | '/api/upload',
  headers: Record<string, string>,
  files: { blob: Blob; name: string }[],
  fields: Record<string, string> = {},
) {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) form.append(name, value)
  for (const f of files) form.append('file', f.blob, f.name)
  const res = await fetch(url + path, { method: 'POST', headers, body: form })
  const text = await res.text()
  if (res.status !== 200 && res.status !== 201)
    throw new Error(`upload ${path} -> ${res.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text) as Uploaded & { images?: Uploaded[] }
}

export const dataPath = (dataDir: string, ...parts: string[]) => join(dataDir, ...parts)
