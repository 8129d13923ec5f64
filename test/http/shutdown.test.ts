/**
 * Graceful shutdown of the real process (issue 2 item 8) and view flushing (issue 3 item 6, DECISIONS.md "Reading
 * images"): `bun src/index.ts` is spawned on its own data directory. SIGTERM stops accepting, lets a request in flight
 * finish and exits 0; buffered views reach the database within 5 s without any shutdown, and whatever is still
 * buffered is written on SIGTERM.
 */

import { describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { originalKey, thumbnailKey } from '../../src/storage'
import { createConfiguredStorage } from '../../src/storage/configured'
import { makeImage, makeNoisePng, uploadForm } from '../fixtures'
import { queryEnv } from '../other-connection'
import { accepts, apiKey, eventually, type Spawned, serverEnv, spawnServer, within } from '../spawn-server'

// bun 1.4.5 applies test/setup.ts's setDefaultTimeout only to the first file of a multi-file run: say it here too.
const TIMEOUT = 60_000

/** The stored view count of an image, read from the server's database with a connection of our own. */
async function storedViews(s: Spawned, id: string): Promise<number> {
  const [row] = await queryEnv<{ views: unknown }>(s.env, 'SELECT views FROM images WHERE id = $1', [id])
  if (!row) throw new Error(`no row for ${id}`)
  return Number(row.views)
}

/**
 * An upload over a socket of our own, its body sent by the test as slowly as it likes: the headers are written, the
 * body (one file part of `bytes`) is returned for the test to write.
 */
async function slowUpload(s: Spawned, key: string, bytes: Uint8Array) {
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
  const socket = connect({ host: '127.0.0.1', port: s.port })
  let response = ''
  socket.on('data', (chunk) => (response += chunk.toString('latin1')))
  const ended = new Promise<void>((resolve) => {
    socket.once('close', () => resolve())
    socket.once('error', () => resolve())
  })
  await within(5000, 'the upload connection', new Promise((resolve) => socket.once('connect', resolve)))
  socket.write(head)
  return { body, socket, response: () => response, ended }
}

describe('SIGTERM', () => {
  test(
    'an upload in flight completes with 201, new connections are refused, the process exits 0',
    async () => {
      const s = await spawnServer()
      const key = await apiKey(s)
      const bytes = await makeNoisePng(256) // about 200 kB of real PNG that does not compress
      const { body, socket, response, ended } = await slowUpload(s, key, bytes)
      const third = Math.floor(body.length / 3)
      socket.write(body.subarray(0, third))
      await Bun.sleep(300)
      expect(response()).toBe('') // still in flight: no answer before the body is complete
      expect(await accepts(s.port)).toBe(true)

      s.proc.kill('SIGTERM')
      // The listener closes while the upload is still in flight, and the process waits for it.
      expect(await eventually(5000, async () => !(await accepts(s.port)))).toBe(true)
      expect(await eventually(5000, () => s.output().includes('"msg":"shutting down"'))).toBe(true)
      expect(s.output()).toContain('"signal":"SIGTERM"')
      expect(s.proc.exitCode).toBeNull()
      expect(response()).toBe('')
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
      const [statusLine] = response().split('\r\n')
      expect(statusLine).toBe('HTTP/1.1 201 Created')
      const json = JSON.parse(response().slice(response().indexOf('\r\n\r\n') + 4))
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

  test(
    'past SHUTDOWN_TIMEOUT an upload still arriving gets 503 + Retry-After, its temp file goes, the process exits 0',
    async () => {
      const s = await spawnServer(await serverEnv({ SHUTDOWN_TIMEOUT: '1' }))
      const key = await apiKey(s)
      const { body, socket, response, ended } = await slowUpload(s, key, await makeNoisePng(256))
      // A trickle that would take minutes: a few hundred bytes every 100 ms until the connection closes.
      let closed = false
      void ended.then(() => (closed = true))
      let sent = 0
      const trickle = (async () => {
        while (!closed && sent < body.length - 1) {
          socket.write(body.subarray(sent, sent + 300))
          sent += 300
          await Bun.sleep(100)
        }
      })()
      const tmp = join(s.dataDir, 'tmp')
      // The body has reached its temp file before the signal.
      expect(await eventually(10_000, () => readdirSync(tmp).length === 1)).toBe(true)

      s.proc.kill('SIGTERM')
      await within(20_000, 'the answer and the closed connection', ended)
      await trickle
      expect(sent).toBeLessThan(body.length - 1)
      const text = response()
      expect(text.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable')
      const headers = text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase()
      expect(headers).toMatch(/\r\nretry-after: \d+\r\n/)
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({
        error: 'The server is restarting; nothing was stored, send the upload again shortly',
      })

      expect(await within(20_000, 'the process to exit', s.proc.exited)).toBe(0)
      expect(readdirSync(tmp)).toEqual([])
      // The log says what it waited for and what it cut.
      const lines = s
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
      expect(lines.find((l) => l.msg === 'shutdown: waiting for requests in flight')).toMatchObject({
        requests: 1,
        uploadsArriving: 1,
        timeoutMs: 1000,
      })
      expect(lines.find((l) => l.msg === 'shutdown deadline passed: cut what was still in flight')).toMatchObject({
        uploadsAnswered503: 1,
      })
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
