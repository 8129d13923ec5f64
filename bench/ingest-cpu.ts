/**
 * Where an upload's time goes (the ingest target in bench/README.md), in CPU time rather than throughput, so the load
 * other processes put on the machine moves it little: the CPU the service's process, its media worker processes and
 * the client spend per upload of each ingest fixture (the 1080p PNG, the 6 MB noise PNG, the 12 MP JPEG; `--uploads`
 * each, 4 at a time), read from /proc, beside the CPU sharp alone spends per thumbnail of the same file
 * (bench/ref/sharp-thumbs.ts's operation, 4 at a time, in this process). At concurrency 4 both cores are busy, so sharp's CPU over the sum is the throughput ratio on an otherwise idle machine.
 *
 * Usage: bun bench/ingest-cpu.ts [--uploads=N]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import sharp from 'sharp'
import { adminCredentials, startApp, upload } from './lib/app'
import { ensureFixtures } from './lib/fixtures'
import { cpuMs, ROOT, workersMs } from './lib/proc'

const { values: args } = parseArgs({ options: { uploads: { type: 'string', default: '60' } } })
const N = Number(args.uploads)
const CONCURRENCY = 4
const ownMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
async function inParallel(n: number, run: (worker: number) => Promise<unknown>) {
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      while (next++ < n) await run(w)
    }),
  )
}

const fixtures = await ensureFixtures(join(ROOT, 'bench/results/fixtures'))
const sets = [
  { name: '1920x1080 PNG', path: fixtures.png1080, type: 'image/png', file: '1080p.png' },
  { name: '1414x1414 noise PNG (6 MB)', path: fixtures.png6mb, type: 'image/png', file: 'noise-6mb.png' },
  { name: '4000x3000 JPEG', path: fixtures.jpeg12mp, type: 'image/jpeg', file: '12mp.jpg' },
]
const dataDir = mkdtempSync(join(tmpdir(), 'imghost-ingest-cpu-'))
const app = await startApp({ dataDir: join(dataDir, 'data'), log: join(dataDir, 'app.log') })
const ms = (x: number) => `${x.toFixed(1)} ms`
try {
  const { apiKey } = await adminCredentials(app.url)
  const headers = { 'x-api-key': apiKey }
  sharp.cache(false)
  for (const set of sets) {
    const file = { blob: new Blob([await Bun.file(set.path).bytes()], { type: set.type }), name: set.file }
    // Warm-up: the worker processes started and the code paths compiled.
    await inParallel(2 * CONCURRENCY, () => upload(app.url, '/api/v1/upload', headers, [file]))
    const [server0, workers0, client0] = [cpuMs(app.pid).self, workersMs(app.pid), ownMs()]
    await inParallel(N, () => upload(app.url, '/api/v1/upload', headers, [file]))
    const server = (cpuMs(app.pid).self - server0) / N
    const workers = (workersMs(app.pid) - workers0) / N
    const client = (ownMs() - client0) / N

    const thumb = (w: number) =>
      sharp(set.path, { failOn: 'error', sequentialRead: true, autoOrient: true })
        .resize(500, 500, { fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 80, effort: 4 })
        .toFile(join(dataDir, `ref-${w}.webp`))
    await inParallel(CONCURRENCY, thumb)
    const sharp0 = ownMs()
    await inParallel(N, thumb)
    const alone = (ownMs() - sharp0) / N

    console.log(`CPU per upload of the ${set.name}, ${N} uploads ${CONCURRENCY} at a time:`)
    console.log(
      `  server process   ${ms(server)}  (receiving, hashing, IPC, storage, SQL, answer; JIT and GC threads included)`,
    )
    console.log(`  media workers    ${ms(workers)}  (detection, metadata check, decode and thumbnail)`)
    console.log(`  client           ${ms(client)}  (the load generator, on the same cores)`)
    console.log(`  sharp alone      ${ms(alone)}  per thumbnail of the same file, ${CONCURRENCY} at a time`)
    console.log(
      `  ratio            ${(alone / (server + workers + client)).toFixed(2)}x with the client, ${(alone / (server + workers)).toFixed(2)}x without`,
    )
  }
} finally {
  await app.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
