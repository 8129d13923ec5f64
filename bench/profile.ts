/**
 * Where a request's time goes, for the routes whose targets bench/README.md reports missed: the in-process cost of
 * each route (`app.handle` in a loop: no socket, no load generator, so nothing but the service's own work), beside the
 * bare Elysia + SQLite reference route on the same database; then a CPU profile of one route (`bun --cpu-prof` on a
 * child that runs only that loop) summarised as its top functions by self time.
 *
 * Usage: bun bench/profile.ts [--route=metadata|original|thumbnail|preset|signed|healthz|upload|'sharp alone'|reference|'bare file'] [--iterations=N] [--top=N]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import sharp from 'sharp'
import { loadConfig } from '../src/config'
import type { FastHandler } from '../src/http/fast-route'
import type { Classifier } from '../src/moderation'
import { startServer } from '../src/server'
import { ADMIN, adminCredentials, upload } from './lib/app'
import { ensureFixtures } from './lib/fixtures'
import { ROOT } from './lib/proc'
import { referenceApp } from './ref/elysia-sqlite'

const { values: args } = parseArgs({
  options: {
    route: { type: 'string', default: 'metadata' },
    iterations: { type: 'string', default: '200000' },
    top: { type: 'string', default: '20' },
    loop: { type: 'string' }, // internal: the child that is profiled
  },
})

/** No model: classification is measured by bench/run.ts, and a loading model would add noise here. */
const noClassifier: Classifier = {
  classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }),
  warm: async () => {},
  close: async () => {},
  queueDepth: 0,
}

async function setUp() {
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-profile-'))
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_REQUESTS: 'false',
    GLOBAL_RATE_LIMIT: '1000000000',
    JWT_SECRET: 'p'.repeat(48),
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
  })
  const server = await startServer(config, { classifier: noClassifier })
  const url = `http://127.0.0.1:${server.port}`
  const { apiKey } = await adminCredentials(url)
  const jpeg = await sharp({
    create: {
      width: 640,
      height: 480,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 30 },
    },
  })
    .jpeg()
    .toBuffer()
  const image = await upload(url, '/api/v1/upload', { 'x-api-key': apiKey }, [
    { blob: new Blob([new Uint8Array(jpeg)], { type: 'image/jpeg' }), name: 'p.jpg' },
  ])
  // A stored variant of each kind (made by the set-up's first call below): a preset, and a signed size.
  const signing = await fetch(`${url}/api/v1/image/${image.id}/variants`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ width: 320, format: 'jpg' }),
  })
  const signed = new URL(((await signing.json()) as { url: string }).url)
  const reference = referenceApp(join(dataDir, 'imghost.sqlite'))
  const base = 'http://localhost'
  const fixtures = await ensureFixtures(join(ROOT, 'bench/results/fixtures'))
  const pngBlob = new Blob([await Bun.file(fixtures.png1080).bytes()], { type: 'image/png' })
  // /cdn and metadata are answered by Bun's router ahead of the app (src/http/fast-route.ts): their handlers are called
  // as the router calls them, with the path parameters on the request.
  const fastRoutes = (server.app.config.serve as { routes: Record<string, { GET: FastHandler }> }).routes
  const routed = (route: string, path: string, params: Record<string, string>) => async () =>
    fastRoutes[route].GET(Object.assign(new Request(`${base}${path}`), { params }), server.app.server!)
  const file = (url: string) => new URL(url).pathname.split('/').pop()!
  const routes: Record<string, () => Promise<Response>> = {
    metadata: routed('/api/v1/image/:id', `/api/v1/image/${image.id}`, { id: image.id }),
    original: routed('/cdn/:file', new URL(image.url).pathname, { file: file(image.url) }),
    thumbnail: routed('/cdn/medium/:file', new URL(image.thumbnail).pathname, { file: file(image.thumbnail) }),
    preset: routed('/cdn/large/:file', `/cdn/large/${image.id}.webp`, { file: `${image.id}.webp` }),
    signed: routed('/cdn/custom/:file', signed.pathname + signed.search, { file: file(signed.href) }),
    healthz: () => server.app.handle(new Request(`${base}/healthz`)),
    // Ingest: one 1920x1080 PNG through POST /api/v1/upload, beside sharp alone making the same thumbnail from the
    // same file (bench/ref/sharp-thumbs.ts): the difference is what the pipeline adds to libvips.
    upload: async () => {
      const form = new FormData()
      form.append('file', pngBlob, '1080p.png')
      const res = await server.app.handle(
        new Request(`${base}/api/v1/upload`, { method: 'POST', headers: { 'x-api-key': apiKey }, body: form }),
      )
      if (res.status !== 201) throw new Error(`upload: ${res.status} ${await res.text()}`)
      return res
    },
    'sharp alone': async () => {
      await sharp(fixtures.png1080, { failOn: 'error', sequentialRead: true, autoOrient: true })
        .resize(500, 500, { fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 80, effort: 4 })
        .toFile(join(dataDir, 'ref.webp'))
      return new Response(null)
    },
    reference: () => reference.handle(new Request(`${base}/api/v1/image/${image.id}`)),
    'bare file': async () =>
      new Response(Bun.file(join(dataDir, 'files', new URL(image.url).pathname.replace('/cdn/', 'originals/')))),
  }
  for (const [name, call] of Object.entries(routes)) {
    const res = await call()
    if (!res.ok) throw new Error(`${name}: ${res.status} ${await res.text()}`)
  }
  const stop = async () => {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  return { routes, stop }
}

/**
 * Microseconds per request over `n` sequential calls, after a warm-up. Bodies are not read: a JSON answer is already
 * serialised when its Response exists, and a file's bytes are sent by the server (sendfile), not by this code.
 */
async function perRequest(call: () => Promise<Response>, n: number): Promise<number> {
  for (let i = 0; i < Math.min(5000, Math.ceil(n / 10)); i++) await call()
  const start = performance.now()
  for (let i = 0; i < n; i++) await call()
  return ((performance.now() - start) * 1000) / n
}

/**
 * Self time per function (name, file and line) of a .cpuprofile, largest first, as shares of the whole, by sample
 * count. Not by the samples' time deltas: the sampler takes none while the thread is idle, so the first sample after
 * an idle gap carries the whole gap, and a route that waits (an upload waits for its media worker) showed whatever
 * ran right after the wait (a `link`, an IPC `send`) as its largest cost.
 */
function topSelfTime(file: string, top: number): string[] {
  type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[] }
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<string, number>()
  for (const id of profile.samples) {
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame
    const where = url ? `${url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${lineNumber + 1}` : 'native'
    const key = `${functionName || '(anonymous)'}  ${where}`
    self.set(key, (self.get(key) ?? 0) + 1)
  }
  const total = profile.samples.length
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, n]) => `${((100 * n) / total).toFixed(1).padStart(5)} %  ${key}`)
}

const iterations = Number(args.iterations)
/** Uploads take ~100,000 times longer than a read: they get this many requests, here and in the profiled child. */
const HEAVY = 40
const count = (route: string, atMost: number) =>
  route === 'upload' || route === 'sharp alone' ? HEAVY : Math.min(iterations, atMost)
const { routes, stop } = await setUp()
try {
  if (args.loop) {
    await perRequest(routes[args.loop], count(args.loop, iterations))
  } else {
    if (!routes[args.route!]) throw new Error(`--route must be one of ${Object.keys(routes).join(', ')}`)
    console.log(
      `in-process cost per request (the route's handler or app.handle; ${Math.min(iterations, 50_000)} sequential requests each, ${HEAVY} for uploads):`,
    )
    for (const [name, call] of Object.entries(routes))
      console.log(`  ${name.padEnd(11)} ${(await perRequest(call, count(name, 50_000))).toFixed(1)} us`)
    const dir = mkdtempSync(join(tmpdir(), 'imghost-cpuprof-'))
    try {
      const child = Bun.spawnSync(
        [
          process.execPath,
          '--cpu-prof',
          `--cpu-prof-dir=${dir}`,
          import.meta.path,
          `--loop=${args.route}`,
          `--iterations=${iterations}`,
        ],
        { stdout: 'ignore', stderr: 'inherit' },
      )
      if (child.exitCode !== 0) throw new Error(`profiled run failed (${child.exitCode})`)
      const [profile] = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
      console.log(
        `\nCPU profile of ${iterations} requests to "${args.route}" (set-up included), top functions by self time:`,
      )
      for (const line of topSelfTime(join(dir, profile), Number(args.top))) console.log(`  ${line}`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
} finally {
  await stop()
}
