/**
 * Graceful shutdown of the real process (issue 2 item 8) and view flushing (issue 3 item 6, DECISIONS.md "Reading
 * images"): `bun src/index.ts` is spawned on its own data directory. SIGTERM stops accepting, lets a request in flight
 * finish and exits 0; buffered views reach the database within 5 s without any shutdown, and whatever is still
 * buffered is written on SIGTERM.
 */

import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { originalKey, thumbnailKey } from '../../src/storage'
import { createConfiguredStorage } from '../../src/storage/configured'
import { makeImage, makeNoisePng, uploadForm } from '../fixtures'
import { databaseEnv, dropDatabase, jsonBody, storageEnv } from '../helpers'
import { queryEnv } from '../other-connection'

// bun 1.4.5 applies test/setup.ts's setDefaultTimeout only to the first file of a multi-file run: say it here too.
const TIMEOUT = 60_000

const ROOT = join(import.meta.dir, '../..')
const dirs: string[] = []
const procs: Bun.Subprocess[] = []
const envs: Record<string, string>[] = []
afterAll(async () => {
  for (const proc of procs) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  for (const env of envs) await dropDatabase(env)
})

/** Resolves with `promise`, or rejects after `ms` naming what it waited for: no wait here is unbounded. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: Timer | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
    }),
  ])
}

/** Polls `check` every 50 ms until it returns true or `ms` pass; returns whether it did. */
async function eventually(ms: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await Bun.sleep(50)
  }
}

interface Spawned {
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  base: string
  port: number
  env: Record<string, string>
  /** Everything the process wrote so far, stdout and stderr. */
  output(): string
}

/** Starts `bun src/index.ts` on a fresh data directory and an OS-chosen port, and waits until it listens. */
async function spawnServer(): Promise<Spawned> {
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-shutdown-'))
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
    JWT_SECRET: 'shutdown-test-secret-'.padEnd(48, 'x'),
  }
  envs.push(env)
  const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env,
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
    env,
    output: () => text,
  }
}

/** An account with an API key, made through the API of the spawned server. */
async function apiKey(s: Spawned): Promise<string> {
  const name = `sd${Date.now().toString(36)}${Math.floor(Math.random() * 1000)}`
  const reg = await fetch(`${s.base}/api/auth/register`, {
    method: 'POST',
    ...jsonBody({ username: name, email: `${name}@example.com`, password: 'correct horse battery' }),
  })
  expect(reg.status).toBe(201)
  const { token } = (await reg.json()) as { token: string }
  const key = await fetch(`${s.base}/api/keys`, {
    method: 'POST',
    ...jsonBody({ name: 'shutdown' }, { authorization: `Bearer ${token}` }),
  })
  expect(key.status).toBe(201)
  return ((await key.json()) as { apiKey: string }).apiKey
}

/** Whether a fresh TCP connection to the port is accepted (false once nothing listens). */
function accepts(port: number): Promise<boolean> {
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

/** The stored view count of an image, read from the server's database with a connection of our own. */
async function storedViews(s: Spawned, id: string): Promise<number> {
  const [row] = await queryEnv<{ views: unknown }>(s.env, 'SELECT views FROM images WHERE id = $1', [id])
  if (!row) throw new Error(`no row for ${id}`)
  return Number(row.views)
}

describe('SIGTERM', () => {
  test(
    'an upload in flight completes with 201, new connections are refused, the process exits 0',
    async () => {
      const s = await spawnServer()
      const key = await apiKey(s)
      const bytes = await makeNoisePng(256) // about 200 kB of real PNG that does not compress
      const boundary = `----imghost${crypto.randomUUID().replaceAll('-', '')}`
      const body = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.png"\r\nContent-Type: image/png\r\n\r\n`,
        ),
        Buffer.from(bytes),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ])
      const head =
        `POST /api/v1/upload HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nX-API-Key: ${key}\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`

      // The upload starts: headers and the first third of the body, over a socket of our own.
      const socket = connect({ host: '127.0.0.1', port: s.port })
      let response = ''
      socket.on('data', (chunk) => (response += chunk.toString('latin1')))
      const ended = new Promise<void>((resolve) => {
        socket.once('close', () => resolve())
        socket.once('error', () => resolve())
      })
      await within(5000, 'the upload connection', new Promise((resolve) => socket.once('connect', resolve)))
      const third = Math.floor(body.length / 3)
      socket.write(head)
      socket.write(body.subarray(0, third))
      await Bun.sleep(300)
      expect(response).toBe('') // still in flight: no answer before the body is complete
      expect(await accepts(s.port)).toBe(true)

      s.proc.kill('SIGTERM')
      // The listener closes while the upload is still in flight, and the process waits for it.
      expect(await eventually(5000, async () => !(await accepts(s.port)))).toBe(true)
      expect(await eventually(5000, () => s.output().includes('"msg":"shutting down"'))).toBe(true)
      expect(s.output()).toContain('"signal":"SIGTERM"')
      expect(s.proc.exitCode).toBeNull()
      expect(response).toBe('')
      const refused = await fetch(`${s.base}/healthz`).then(
        () => 'answered',
        () => 'refused',
      )
      expect(refused).toBe('refused')

      // The rest of the body, slowly.
      const rest = body.subarray(third)
      const step = Math.ceil(rest.length / 4)
      for (let i = 0; i < rest.length; i += step) {
        socket.write(rest.subarray(i, i + step))
        await Bun.sleep(150)
      }
      await within(20_000, 'the upload response', ended)
      const [statusLine] = response.split('\r\n')
      expect(statusLine).toBe('HTTP/1.1 201 Created')
      const json = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))
      expect(json.success).toBe(true)
      expect(json.size).toBe(bytes.length)
      const id: string = json.id

      const code = await within(20_000, 'the process to exit', s.proc.exited)
      expect(s.proc.signalCode).toBeNull()
      expect(code).toBe(0)
      expect(await accepts(s.port)).toBe(false)

      // What it answered is really there: the row in the database, the original and its thumbnail in storage.
      const [row] = await queryEnv<{ size: unknown }>(s.env, 'SELECT size FROM images WHERE id = $1', [id])
      expect(Number(row?.size)).toBe(bytes.length)
      const storage = createConfiguredStorage(loadConfig(s.env))
      expect(await storage.stat(originalKey(id, 'png'))).toMatchObject({ size: bytes.length })
      expect(await storage.exists(thumbnailKey(id))).toBe(true)
    },
    TIMEOUT,
  )
})

describe('views', () => {
  test(
    'reach the database on the timed flush, without a shutdown; the rest are written on SIGTERM',
    async () => {
      const s = await spawnServer()
      const key = await apiKey(s)
      const up = await fetch(`${s.base}/api/v1/upload`, {
        method: 'POST',
        headers: { 'x-api-key': key },
        body: uploadForm([{ bytes: await makeImage('png') }]),
      })
      expect(up.status).toBe(201)
      const { id } = (await up.json()) as { id: string }
      const load = async (path: string) => {
        const res = await fetch(`${s.base}${path}`)
        expect(res.status).toBe(200)
        await res.arrayBuffer()
      }
      const loadAll = async (n: number) => {
        for (let i = 0; i < n; i++) await load(i % 3 === 2 ? `/i/${id}` : `/cdn/${id}.png`)
      }
      const apiViews = async () => {
        const res = await fetch(`${s.base}/api/v1/image/${id}`)
        expect(res.status).toBe(200)
        return ((await res.json()) as { data: { views: number } }).data.views
      }

      // The timed flush: no shutdown, no manual flush; the API and the database both reach the count in time.
      await loadAll(4)
      expect(await eventually(30_000, async () => (await apiViews()) === 4)).toBe(true)
      expect(await eventually(30_000, async () => (await storedViews(s, id)) === 4)).toBe(true)
      // Thumbnails and API reads did not count.
      await load(`/cdn/medium/${id}.webp`)
      expect(await apiViews()).toBe(4)

      // More loads, then SIGTERM before the next timed flush: they are still only in memory when the signal arrives.
      let total = 4
      let bufferedAtSignal = 0
      for (let attempt = 0; attempt < 5 && bufferedAtSignal === 0; attempt++) {
        await loadAll(3)
        total += 3
        bufferedAtSignal = total - (await storedViews(s, id)) // 0 when a timed flush happened to run just now
        if (bufferedAtSignal > 0) s.proc.kill('SIGTERM')
      }
      expect(bufferedAtSignal).toBeGreaterThan(0)
      const code = await within(20_000, 'the process to exit', s.proc.exited)
      expect(s.proc.signalCode).toBeNull()
      expect(code).toBe(0)
      expect(await storedViews(s, id)).toBe(total)
    },
    TIMEOUT,
  )
})
