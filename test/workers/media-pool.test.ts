import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { makeFrameBombGif, makeImage, uploadForm } from '../fixtures'
import { isAlive, startTestServer, storedKeys, type TestServer, whileHealthy } from '../helpers'
import { nestedUseSvg, oneBitBmp } from '../media/hostile-files'

/** This process's media worker processes, from /proc. */
function mediaWorkers(): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes('media-worker'))
        pids.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

describe('untrusted bytes are decoded in worker processes, under budgets', () => {
  let t: TestServer
  /** The same, with a short time budget (the slow file would otherwise run for its whole default budget). */
  let short: TestServer
  beforeAll(async () => {
    t = await startTestServer()
    short = await startTestServer({ MEDIA_JOB_TIMEOUT_MS: '1000' })
  })
  afterAll(() => Promise.all([t.stop(), short.stop()]))

  test('an ordinary upload is processed in a worker process, not in the server', async () => {
    const res = await t.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('png', 640, 480) }]),
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ width: 640, height: 480, mime: 'image/png' })
    // The worker that did it stays for a while (it exits when idle), a child of this process.
    expect(mediaWorkers().length).toBeGreaterThan(0)
  })

  test('a 12.5 MB 1-bit 10000x10000 BMP: decoded off the server (no 400 MB buffer here), health answers throughout', async () => {
    const before = process.memoryUsage.rss()
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10)
    const bmp = oneBitBmp(10_000)
    const result = await whileHealthy(t, () =>
      t.json('/api/upload', { method: 'POST', body: uploadForm([{ bytes: bmp, name: 'big.bmp' }]) }),
    )
    clearInterval(sampler)
    expect(result.body).toMatchObject({ width: 10_000, height: 10_000, mime: 'image/bmp' })
    expect(result.status).toBe(201)
    // The 400 MB of decoded pixels lived in a worker process: this one grew by the 12.5 MB body and its copies at most.
    expect(peak - before).toBeLessThan(200 * 2 ** 20)
    const thumb = await t.fetch(new URL(result.body.thumbnail).pathname)
    expect(thumb.status).toBe(200)
  })

  test('a 26 KB GIF that decodes for seconds is stopped at its time budget: 400, its process killed, nothing stored', async () => {
    const keysBefore = await storedKeys(short)
    const rowsBefore = (await short.json('/api/gallery')).body.images.length
    // 1000 frames of 1000x1000: within the frames an upload may decode, but seconds of work for a 1 s budget.
    const gif = makeFrameBombGif(1000, 1000)
    const seen = new Set<number>()
    const watcher = setInterval(() => {
      for (const pid of mediaWorkers()) seen.add(pid)
    }, 20)
    // /healthz answers within the generous bound throughout (the tight figure is in the bench's hostile group).
    const result = await whileHealthy(short, () =>
      short.json('/api/upload', { method: 'POST', body: uploadForm([{ bytes: gif, name: 'slow.gif' }]) }),
    )
    clearInterval(watcher)
    // The process that was decoding it was killed: its CPU is free again.
    expect([...seen].some((pid) => !isAlive(pid))).toBe(true)
    expect(result.status).toBe(400)
    expect(result.body.error).toContain('slow.gif')
    expect(result.body.error).toContain('took too long')
    expect(await storedKeys(short)).toEqual(keysBefore)
    expect((await short.json('/api/gallery')).body.images.length).toBe(rowsBefore)
  })

  test('a 2 KB SVG that would draw a million blurs is refused from its markup, before it is drawn', async () => {
    const svg = nestedUseSvg(6, 10)
    expect(svg.length).toBeLessThan(2048)
    const result = await t.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: new TextEncoder().encode(svg), name: 'slow.svg' }]),
    })
    expect(result.status).toBe(400)
    // A million blurred rectangles through the <use>s (the counts themselves: test/media/svg-work.test.ts).
    expect(result.body.error).toStartWith('slow.svg: SVG too complex: ')
  })

  test('after a kill, the next upload is processed by a live worker', async () => {
    const res = await short.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('jpeg', 320, 200) }]),
    })
    expect(res.status).toBe(201)
  })

  test("a worker process gets none of the server's secrets from its environment", async () => {
    const saved = process.env.JWT_SECRET
    process.env.JWT_SECRET = 'a-secret-the-workers-must-never-see'
    const fresh = await startTestServer()
    try {
      const before = new Set(mediaWorkers())
      expect(
        (
          await fresh.json('/api/upload', {
            method: 'POST',
            body: uploadForm([{ bytes: await makeImage('png', 32, 32) }]),
          })
        ).status,
      ).toBe(201)
      const started = mediaWorkers().filter((pid) => !before.has(pid))
      expect(started.length).toBeGreaterThan(0)
      for (const pid of started) {
        const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
        expect(environ).toContain('IMGHOST_WORKER=media')
        expect(environ.some((v) => v.startsWith('JWT_SECRET='))).toBe(false)
        expect(environ.join('\n')).not.toContain('a-secret-the-workers-must-never-see')
        // Nor those of a `.env` beside the server: Bun reads one from the working directory unless told not to.
        expect(readlinkSync(`/proc/${pid}/cwd`)).toBe('/')
        expect(readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')).toContain('--no-env-file')
      }
    } finally {
      if (saved === undefined) delete process.env.JWT_SECRET
      else process.env.JWT_SECRET = saved
      await fresh.stop()
    }
  })
})
