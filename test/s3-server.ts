/**
 * A real S3-protocol server on loopback for the tests and CI: s3rver (an npm fake of S3 that keeps objects on disk and
 * checks SigV4 signatures) with one bucket, plus a small control API for tests (request log, injected failures).
 *
 *   bun test/s3-server.ts [--port 0] [--dir <directory>] [--bucket imghost-test]
 *
 * Prints `s3-server listening on http://127.0.0.1:<port>` once ready; SIGTERM or SIGINT stop it. Tests and the
 * `test:s3` runner start it as a child process with `spawnS3Server`, so "the bucket is down" is a killed process.
 *
 * Control API (paths no bucket can have):
 *   GET    /__control/requests          the S3 requests seen so far: [{ method, path, query, range? }]
 *   DELETE /__control/requests          forget them
 *   POST   /__control/fail?count=N      answer the next N S3 requests with 503 SlowDown
 */
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const S3_TEST_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', region: 'us-east-1' } as const
export const S3_TEST_BUCKET = 'imghost-test'

export interface SeenRequest {
  method: string
  path: string
  query: Record<string, string>
  range?: string
}

async function serve(opts: { port: number; dir: string; bucket: string }) {
  const require = createRequire(import.meta.url)
  // Two fixes s3rver 3.7 needs here, applied before it loads:
  // 1. It obfuscates ListObjectsV2 continuation tokens with DES, which Bun's crypto (BoringSSL) does not have: an
  //    identity "cipher" keeps the tokens working (they stay opaque to clients all the same).
  const crypto = require('node:crypto')
  const identity = () => ({ update: (data: string | Buffer) => Buffer.from(data), final: () => Buffer.alloc(0) })
  const { createCipheriv, createDecipheriv } = crypto
  crypto.createCipheriv = (algorithm: string, ...rest: unknown[]) =>
    algorithm === 'des' ? identity() : createCipheriv(algorithm, ...rest)
  crypto.createDecipheriv = (algorithm: string, ...rest: unknown[]) =>
    algorithm === 'des' ? identity() : createDecipheriv(algorithm, ...rest)
  // 2. It walks the bucket directory in readdir order, but S3 lists keys sorted and paging depends on that.
  const utils = require('s3rver/lib/utils')
  const fs = require('node:fs')
  const path = require('node:path')
  utils.walk = function* walk(dir: string, recurseFilter?: (dir: string) => boolean): Generator<string> {
    // Keys are stored as `<key>._S3rver_object` files and directories per `/`: sorting the names sorts the keys.
    for (const name of (fs.readdirSync(dir) as string[]).sort()) {
      const filePath = path.posix.join(dir, name)
      if (!fs.statSync(filePath).isDirectory()) yield filePath
      else if (!recurseFilter || recurseFilter(filePath)) yield* walk(filePath, recurseFilter)
    }
  }
  const S3rver = require('s3rver')
  const http = require('node:http')

  const s3 = new S3rver({
    silent: true,
    directory: opts.dir,
    configureBuckets: [{ name: opts.bucket }],
    vhostBuckets: false,
  })
  await s3.configureBuckets()
  const handle = s3.callback()
  const seen: SeenRequest[] = []
  let failNext = 0

  const server = http.createServer((req: any, res: any) => {
    const url = new URL(req.url, 'http://localhost')
    if (url.pathname.startsWith('/__control/')) {
      res.setHeader('content-type', 'application/json')
      if (url.pathname === '/__control/requests' && req.method === 'GET') return res.end(JSON.stringify(seen))
      if (url.pathname === '/__control/requests' && req.method === 'DELETE') {
        seen.length = 0
        return res.end('{}')
      }
      if (url.pathname === '/__control/fail' && req.method === 'POST') {
        failNext = Number(url.searchParams.get('count') ?? 1)
        return res.end('{}')
      }
      res.statusCode = 404
      return res.end('{}')
    }
    seen.push({
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      ...(req.headers.range ? { range: req.headers.range } : {}),
    })
    if (failNext > 0) {
      failNext--
      req.resume()
      res.statusCode = 503
      res.setHeader('content-type', 'application/xml')
      return res.end(
        '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
      )
    }
    handle(req, res)
  })
  await new Promise<void>((resolve) => server.listen(opts.port, '127.0.0.1', resolve))
  return { port: server.address().port as number }
}

export interface S3TestServer {
  port: number
  endpoint: string
  bucket: string
  dir: string
  /** The environment that points the service at this server (STORAGE=s3 and every S3_* but the prefix). */
  env: Record<string, string>
  requests(): Promise<SeenRequest[]>
  clearRequests(): Promise<void>
  /** The next `count` S3 requests answer 503 SlowDown. */
  failNext(count: number): Promise<void>
  /** Kills the server process (SIGKILL: open connections drop, as when a bucket's host goes away). */
  kill(): Promise<void>
}

/** Starts the server as a child process and waits until it listens; `port` 0 picks a free one. */
export async function spawnS3Server(
  opts: { port?: number; dir?: string; bucket?: string } = {},
): Promise<S3TestServer> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'imghost-s3-'))
  const bucket = opts.bucket ?? S3_TEST_BUCKET
  const proc = Bun.spawn(
    [process.execPath, import.meta.path, '--port', String(opts.port ?? 0), '--dir', dir, '--bucket', bucket],
    {
      stdout: 'pipe',
      stderr: 'inherit',
      env: { ...process.env, NODE_ENV: 'test' },
    },
  )
  const reader = proc.stdout.getReader()
  let output = ''
  let port = 0
  const deadline = Date.now() + 15_000
  while (!port) {
    const chunk = await Promise.race([reader.read(), Bun.sleep(Math.max(0, deadline - Date.now())).then(() => null)])
    if (!chunk || chunk.done) {
      proc.kill('SIGKILL')
      throw new Error(`s3-server did not start: ${output}`)
    }
    output += new TextDecoder().decode(chunk.value)
    port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1] ?? 0)
  }
  reader.releaseLock()
  const endpoint = `http://127.0.0.1:${port}`
  const control = (path: string, method = 'GET') => fetch(`${endpoint}/__control/${path}`, { method })
  return {
    port,
    endpoint,
    bucket,
    dir,
    env: {
      STORAGE: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_REGION: S3_TEST_CREDENTIALS.region,
      S3_ACCESS_KEY_ID: S3_TEST_CREDENTIALS.accessKeyId,
      S3_SECRET_ACCESS_KEY: S3_TEST_CREDENTIALS.secretAccessKey,
    },
    requests: async () => (await control('requests')).json() as Promise<SeenRequest[]>,
    clearRequests: async () => void (await control('requests', 'DELETE')),
    failNext: async (count) => void (await control(`fail?count=${count}`, 'POST')),
    async kill() {
      proc.kill('SIGKILL')
      await proc.exited
    },
  }
}

if (import.meta.main) {
  const arg = (name: string, fallback: string) => {
    const i = process.argv.indexOf(`--${name}`)
    return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback
  }
  const dir = arg('dir', '') || mkdtempSync(join(tmpdir(), 'imghost-s3-'))
  const server = await serve({ port: Number(arg('port', '0')), dir, bucket: arg('bucket', S3_TEST_BUCKET) })
  console.log(
    `s3-server listening on http://127.0.0.1:${server.port} (bucket ${arg('bucket', S3_TEST_BUCKET)}, data in ${dir})`,
  )
  // Keep-alive connections would hold a graceful close open: a test server just goes.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0))
}
