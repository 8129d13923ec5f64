import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseEnv, dropDatabase, eventually, storageEnv } from './helpers'

// The server as an operator starts it (`bun src/index.ts`), its output read off a pipe (a log collector, a file) or
// off a real pseudo-terminal (Bun.spawn's `terminal`: the process sees isatty true, as in a shell).

const ROOT = join(import.meta.dir, '..')
const dirs: string[] = []
const envs: Record<string, string>[] = []
afterAll(async () => {
  for (const env of envs) await dropDatabase(env)
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** A fresh data directory (and, on PostgreSQL runs, database), on an OS-chosen port; nothing of this shell's own. */
async function environment(extra: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-log-'))
  dirs.push(dataDir)
  // With DATABASE_URL every key must be given (databaseEnv gives two): the JWT secret too.
  const keys = { JWT_SECRET: 'log-test-secret-'.padEnd(48, 'x') }
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...storageEnv(), ...(await databaseEnv()), ...keys }
  envs.push(env)
  return { ...env, DATA_DIR: dataDir, PORT: '0', ...extra }
}

interface Started {
  /** Everything written so far (stdout then stderr for a pipe; the terminal's one stream for a PTY). */
  output(): string
  port: number
  stop(): Promise<void>
}

/** Starts the server, on a pipe or a terminal, and waits for its start line (or its exit). */
async function start(env: Record<string, string>, on: 'pipe' | 'terminal'): Promise<Started> {
  let text = ''
  const decoder = new TextDecoder()
  const proc =
    on === 'terminal'
      ? Bun.spawn([process.execPath, 'src/index.ts'], {
          cwd: ROOT,
          env,
          terminal: {
            cols: 400,
            data: (_terminal, chunk) => {
              text += decoder.decode(chunk, { stream: true })
            },
          },
        })
      : Bun.spawn([process.execPath, 'src/index.ts'], {
          cwd: ROOT,
          env,
          stdin: 'ignore',
          stdout: 'pipe',
          stderr: 'pipe',
        })
  if (on === 'pipe') {
    const drain = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
    }
    void drain(proc.stdout as ReadableStream<Uint8Array>)
    void drain(proc.stderr as ReadableStream<Uint8Array>)
  }
  await eventually(() => proc.exitCode !== null || /listening/.test(text), 30_000, 'the start line')
  const port = Number((/"port":(\d+)/.exec(text) ?? /listening on http:\/\/localhost:(\d+)/.exec(text))?.[1] ?? 0)
  return {
    output: () => text,
    port,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      proc.terminal?.close()
    },
  }
}

/** The lines written, without the colour a terminal gets (Bun paints stderr red there). */
const lines = (text: string) =>
  Bun.stripANSI(text)
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
/** An ISO 8601 timestamp in UTC, as toISOString writes it (and reads back the same). */
const isIsoTime = (value: unknown) =>
  typeof value === 'string' &&
  /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(value) &&
  new Date(value).toISOString() === value

describe('off a terminal (a pipe): JSON lines', () => {
  test('every line is JSON with an ISO timestamp; the start line says there is no admin and how to make one', async () => {
    const before = Date.now()
    const server = await start(await environment(), 'pipe')
    try {
      expect(server.port).toBeGreaterThan(0)
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200)
      await eventually(() => server.output().includes('"msg":"request"'), 30_000, 'the request line')
    } finally {
      await server.stop()
    }
    const after = Date.now()
    const entries = lines(server.output()).map((line) => JSON.parse(line))
    expect(entries.length).toBeGreaterThanOrEqual(3)
    for (const entry of entries) {
      expect(isIsoTime(entry.time), JSON.stringify(entry)).toBe(true)
      // The time of the event itself: between the start of this test and the server's exit.
      expect(Date.parse(entry.time)).toBeGreaterThanOrEqual(before - 1000)
      expect(Date.parse(entry.time)).toBeLessThanOrEqual(after + 1000)
    }
    const listening = entries.find((entry) => entry.msg === 'listening')
    expect(listening).toMatchObject({ level: 'info', port: server.port, admin: false })
    expect(listening.hint).toContain('create-admin <username> <email> <password>')
    expect(entries.find((entry) => entry.msg === 'request')).toMatchObject({ route: '/healthz', status: 200 })
  })

  test('LOG_FORMAT=pretty gives readable lines off a terminal too', async () => {
    const server = await start(await environment({ LOG_FORMAT: 'pretty' }), 'pipe')
    await server.stop()
    const first = lines(server.output()).find((line) => line.includes('listening'))
    expect(first).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z info {2}listening on http:\/\/localhost:\d+, no admin yet/)
  })

  test('an unknown LOG_FORMAT stops the start with a message naming it', async () => {
    const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
      cwd: ROOT,
      env: await environment({ LOG_FORMAT: 'yaml' }),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    expect(await proc.exited).toBe(1)
    expect(await new Response(proc.stderr).text()).toContain('LOG_FORMAT')
  })
})

describe('on a terminal: readable lines', () => {
  test('a start line to read, with the address and, until an admin exists, the command that makes one', async () => {
    const env = await environment()
    const first = await start(env, 'terminal')
    let port = 0
    try {
      port = first.port
      expect(port).toBeGreaterThan(0)
      await fetch(`http://127.0.0.1:${port}/gallery`)
      await eventually(() => first.output().includes('route=/gallery'), 30_000, 'the request line')
    } finally {
      await first.stop()
    }
    const shown = lines(first.output())
    const startLine = shown.find((line) => line.includes('listening'))!
    expect(startLine).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info {2}listening on http:\/\/localhost:\d+, no admin yet: run `bun run cli create-admin <username> <email> <password>`/,
    )
    expect(startLine).toContain(`http://localhost:${port},`)
    // Not JSON: every line starts with its ISO timestamp, then the level.
    for (const line of shown) expect(isIsoTime(line.split(' ')[0]), line).toBe(true)
    expect(shown.find((line) => line.includes('route=/gallery'))).toMatch(
      / info {2}request method=GET route=\/gallery status=200 durationMs=[\d.]+ bytes=\d+$/,
    )

    // What the hint says, run as it says it, in the repository: then the start line has no hint.
    const [command, ...args] = /`([^`]+)`/.exec(startLine)![1].split(' ')
    const made = Bun.spawn(
      [
        command === 'bun' ? process.execPath : command,
        ...args.slice(0, -3),
        'alice',
        'alice@example.com',
        'a long password',
      ],
      { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' },
    )
    expect(await made.exited).toBe(0)
    const second = await start(env, 'terminal')
    await second.stop()
    const again = lines(second.output()).find((line) => line.includes('listening'))!
    expect(again).toMatch(/ info {2}listening on http:\/\/localhost:\d+$/)
  })

  test('LOG_FORMAT=json keeps JSON lines on a terminal', async () => {
    const server = await start(await environment({ LOG_FORMAT: 'json' }), 'terminal')
    await server.stop()
    const entries = lines(server.output()).map((line) => JSON.parse(line))
    expect(entries.find((entry) => entry.msg === 'listening')).toMatchObject({ admin: false, port: server.port })
  })

  test('a PUBLIC_URL of another host is named beside the local address', async () => {
    const server = await start(await environment({ PUBLIC_URL: 'https://img.example.com' }), 'terminal')
    await server.stop()
    expect(lines(server.output()).find((line) => line.includes('listening'))).toContain(
      `listening on http://localhost:${server.port} (public address https://img.example.com), no admin yet`,
    )
  })
})
