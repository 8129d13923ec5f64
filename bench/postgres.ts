/**
 * `npm run bench:pg` (`bun bench/postgres.ts`): the service on PostgreSQL, in one run on a throwaway cluster
 * (test/pg-cluster.ts) and a database made for it:
 *
 * 1. `GET /api/v1/image/:id` of one instance (DATABASE_URL, STORAGE=local) beside `bench/ref/bun-sql.ts`, a bare
 *    Bun.serve + Bun.SQL route answering the same row by primary key from the same database (target >= 0.5x).
 * 2. The same route through nginx: round-robin over two instances on the same database, beside one instance behind the
 *    same nginx (the proxy's cost is in both).
 *
 * Every figure is a median of interleaved runs (wrk, 32 connections), with the CPU each process spent per request
 * (from /proc) beside it. Everything started here is stopped, and the temp directories removed, also on failure.
 *
 * The service answers a known id from its live-image cache (no query: the CPU columns show PostgreSQL idle), so 1.
 * also measures the query path: every request a different random id of the right shape (wrk script), 404 in both.
 * Misses are not cached, and concurrent lookups share a query only when their id is the same, so the service makes one
 * prepared primary-key query per request there, as the reference does (wrk only).
 *
 * Options: --seconds=N (default 3) --rounds=N (default 3) per throughput figure; --skip-miss leaves the random-id
 * figure out; --keep keeps the temp directory.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SQL } from 'bun'
import { type PgCluster, startPgCluster } from '../test/pg-cluster'
import { adminCredentials, METRICS_TOKEN, startApp, upload } from './lib/app'
import { ensureFixtures } from './lib/fixtures'
import { type LoadResult, load, pickLoadTool } from './lib/load'
import { startNginxProxy } from './lib/nginx'
import { BUN, childrenOf, cpuMs, freePort, ROOT, spawnLogged, stopChild, tempDir, waitHealthy } from './lib/proc'
import { figure, machine, printFigure } from './lib/report'
import { median } from './lib/stats'

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
    'skip-miss': { type: 'boolean', default: false },
  },
})
const SECONDS = Number(args.seconds)
const ROUNDS = Number(args.rounds)
const CONNECTIONS = 32
const tool = pickLoadTool()
const began = performance.now()
const section = (title: string) => console.log(`\n== ${title} (${((performance.now() - began) / 1000).toFixed(0)} s)`)

/** PIDs of the cluster's postmaster (found by its port on its command line) and of all its children. */
function postgresPids(port: number): number[] {
  const parentOf = new Map<number, number>()
  let postmaster: number | undefined
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
      if (postmaster === undefined && stat.includes('(postgres)')) {
        const cmd = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0')
        if (cmd.some((arg, i) => (arg === '-p' && cmd[i + 1] === String(port)) || arg === `-p ${port}`))
          postmaster = Number(entry)
      }
    } catch {
      // gone meanwhile
    }
  }
  if (postmaster === undefined) return []
  return [postmaster, ...[...parentOf].filter(([, ppid]) => ppid === postmaster).map(([pid]) => pid)]
}

/** CPU ms of a group of processes: their own, plus the children they have reaped (PostgreSQL's ended backends). */
function groupCpuMs(pids: number[]): number {
  let total = 0
  for (const pid of pids) {
    try {
      const cpu = cpuMs(pid)
      total += cpu.self + cpu.children
    } catch {
      // gone meanwhile: its time is in its parent's reaped children, read from the parent
    }
  }
  return total
}

interface Measured {
  label: string
  url: string
  /** Medians of the rounds. */
  rps: number
  p99Ms: number
  runs: number[]
  errors: number
  /** CPU microseconds per request, by process group, median of the rounds. */
  cpuUsPerRequest: Record<string, number>
}

/**
 * As `compare()` in lib/load.ts (one warm-up each, then the targets interleaved, A B A B ..., medians), and the CPU
 * each named process group spent during every run, per request.
 */
async function measure(
  targets: { label: string; url: string; script?: string }[],
  groups: Record<string, () => number[]>,
): Promise<Measured[]> {
  for (const t of targets) await load(tool, t.url, CONNECTIONS, 1, t.script)
  const runs = new Map(targets.map((t) => [t.label, [] as { r: LoadResult; cpu: Record<string, number> }[]]))
  const cpuNow = () => Object.fromEntries(Object.entries(groups).map(([name, pids]) => [name, groupCpuMs(pids())]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of targets) {
      const before = cpuNow()
      const r = await load(tool, t.url, CONNECTIONS, SECONDS, t.script)
      const after = cpuNow()
      const cpu = Object.fromEntries(
        Object.keys(groups).map((name) => [name, ((after[name] - before[name]) * 1000) / Math.max(1, r.requests)]),
      )
      runs.get(t.label)?.push({ r, cpu })
    }
  }
  return targets.map((t) => {
    const rs = runs.get(t.label) ?? []
    return {
      label: t.label,
      url: t.url,
      rps: median(rs.map((x) => x.r.rps)),
      p99Ms: median(rs.map((x) => x.r.p99Ms)),
      runs: rs.map((x) => Math.round(x.r.rps)),
      errors: rs.reduce((s, x) => s + x.r.errors, 0),
      cpuUsPerRequest: Object.fromEntries(Object.keys(groups).map((g) => [g, median(rs.map((x) => x.cpu[g]))])),
    }
  })
}

const cpuText = (m: Measured) =>
  Object.entries(m.cpuUsPerRequest)
    .filter(([, us]) => us >= 0.5)
    .map(([g, us]) => `${g} ${us.toFixed(0)}`)
    .join(', ')

/** Requests to GET /api/v1/image/:id an instance has counted (its /metrics). */
async function metadataRequests(url: string): Promise<number> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  const text = await res.text()
  let n = 0
  for (const line of text.split('\n'))
    if (line.startsWith('http_requests_total{') && line.includes('/api/v1/image/:id"') && line.includes('GET'))
      n += Number(line.slice(line.lastIndexOf(' ') + 1))
  return n
}

async function main(work: string, stops: (() => Promise<void>)[]) {
  const m = machine()
  console.log(
    `imghost bench (PostgreSQL): load tool ${tool}, ${CONNECTIONS} connections, ${ROUNDS} x ${SECONDS} s per figure; ` +
      `${m.cores} cores, ${m.cpu}, Bun ${m.bun}; work dir ${work}`,
  )
  if (tool !== 'wrk') console.log('  (autocannon: figures bounded by the client; install wrk for real numbers)')
  const fixtures = await ensureFixtures(join(ROOT, 'bench/results/fixtures'))

  section('cluster')
  const cluster: PgCluster = await startPgCluster()
  stops.push(() => cluster.stop())
  // Interrupted: the cluster runs detached (pg_ctl), so it is stopped here; lib/proc.ts kills the other children.
  // `stop()` runs synchronously (pg_ctl stop, then the directory removed).
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      void cluster.stop()
      if (!args.keep) rmSync(work, { recursive: true, force: true })
      process.exit(130)
    })
  const admin = new SQL(cluster.url)
  await admin.unsafe('CREATE DATABASE imghost_bench')
  const version = ((await admin.unsafe('SHOW server_version')) as { server_version: string }[])[0].server_version
  await admin.close()
  const dbUrl = new URL(cluster.url)
  dbUrl.pathname = '/imghost_bench'
  console.log(`  PostgreSQL ${version} on port ${cluster.port} (fsync off, as test/pg-cluster.ts starts it)`)
  const pgPids = () => postgresPids(cluster.port)

  // What every instance shares: the database and the keys (required with DATABASE_URL); each has its own data
  // directory and local files (the metadata route reads no file).
  const env = {
    DATABASE_URL: dbUrl.toString(),
    VARIANT_SECRET: 'bench-variant-secret-'.padEnd(48, 'v'),
    TOTP_KEY: 'bench-totp-key-'.padEnd(48, 't'),
    STORAGE: 'local',
  }
  const a = await startApp({ dataDir: join(work, 'a'), log: join(work, 'app-a.log'), env })
  stops.push(() => a.stop())
  console.log(`  instance A started in ${Math.round(a.startMs)} ms (migrations applied by it), ${a.url}`)
  const { apiKey } = await adminCredentials(a.url)
  const small = await upload(a.url, '/api/v1/upload', { 'x-api-key': apiKey }, [
    { blob: new Blob([await Bun.file(fixtures.smallJpeg).arrayBuffer()], { type: 'image/jpeg' }), name: 'small.jpg' },
  ])
  const path = `/api/v1/image/${small.id}`
  console.log(`  uploaded ${small.id} through A`)

  section(`metadata on PostgreSQL: the service beside bare Bun.serve + Bun.SQL (${tool}, ${CONNECTIONS} connections)`)
  const refPort = freePort()
  const ref = spawnLogged([BUN, 'bench/ref/bun-sql.ts', String(refPort), dbUrl.toString()], {
    log: join(work, 'bun-sql.log'),
  })
  stops.push(() => stopChild(ref))
  const refUrl = `http://127.0.0.1:${refPort}`
  await waitHealthy(refUrl + path, performance.now(), 10_000, ref)
  const appRow = ((await (await fetch(a.url + path)).json()) as { data: { id: string } }).data
  const refRow = ((await (await fetch(refUrl + path)).json()) as { data: { id: string } }).data
  if (appRow.id !== small.id || refRow.id !== small.id)
    throw new Error('the service and the reference differ on the row')
  const [app1, bare] = await measure(
    [
      { label: 'app', url: a.url + path },
      { label: 'ref', url: refUrl + path },
    ],
    { app: () => [a.pid], ref: () => [ref.pid], postgres: pgPids },
  )
  const f1 = figure({
    group: 'metadata (PostgreSQL)',
    figure: 'GET /api/v1/image/:id, one instance',
    value: app1.rps,
    unit: 'req/s',
    reference: 'bare Bun.serve + Bun.SQL, one PK lookup per request',
    refValue: bare.rps,
    target: '>= 0.5x',
    met: app1.rps / bare.rps >= 0.5,
    note:
      `p99 ${app1.p99Ms.toFixed(1)} vs ${bare.p99Ms.toFixed(1)} ms; runs ${app1.runs.join('/')} vs ${bare.runs.join('/')}; ` +
      `CPU us/request: app run [${cpuText(app1)}], ref run [${cpuText(bare)}]` +
      (app1.errors + bare.errors ? `; ${app1.errors + bare.errors} errors` : ''),
  })
  printFigure(f1)
  if (!args['skip-miss'] && tool === 'wrk') {
    // Every request a fresh random id (8 letters and digits: 62^8, so none is the uploaded one in practice).
    const script = join(work, 'random-id.lua')
    await Bun.write(
      script,
      `local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
math.randomseed(os.time())
request = function()
  local id = {}
  for i = 1, 8 do
    local n = math.random(1, #chars)
    id[i] = chars:sub(n, n)
  end
  return wrk.format("GET", "/api/v1/image/" .. table.concat(id))
end
`,
    )
    const unknown = '/api/v1/image/Zz9Zz9Zz'
    for (const url of [a.url + unknown, refUrl + unknown]) {
      const res = await fetch(url)
      await res.arrayBuffer()
      if (res.status !== 404) throw new Error(`${url} answered ${res.status}, not 404`)
    }
    const [appMiss, bareMiss] = await measure(
      [
        { label: 'app', url: a.url + unknown, script },
        { label: 'ref', url: refUrl + unknown, script },
      ],
      { app: () => [a.pid], ref: () => [ref.pid], postgres: pgPids },
    )
    // wrk counts every 404 as an error, so errors are not reported here.
    printFigure(
      figure({
        group: 'metadata (PostgreSQL)',
        figure: 'GET /api/v1/image/:id, a different unknown id per request (404: one PK query per request in both)',
        value: appMiss.rps,
        unit: 'req/s',
        reference: 'bare Bun.serve + Bun.SQL, the same requests',
        refValue: bareMiss.rps,
        note:
          `p99 ${appMiss.p99Ms.toFixed(1)} vs ${bareMiss.p99Ms.toFixed(1)} ms; runs ${appMiss.runs.join('/')} vs ${bareMiss.runs.join('/')}; ` +
          `CPU us/request: app run [${cpuText(appMiss)}], ref run [${cpuText(bareMiss)}]`,
      }),
    )
  }
  await stopChild(ref)

  section('two instances on one database, through nginx (1 worker, keep-alive upstreams)')
  const b = await startApp({ dataDir: join(work, 'b'), log: join(work, 'app-b.log'), env })
  stops.push(() => b.stop())
  const rowB = ((await (await fetch(b.url + path)).json()) as { data: { id: string } }).data
  if (rowB.id !== small.id) throw new Error(`instance B does not see ${small.id}`)
  console.log(`  instance B started in ${Math.round(b.startMs)} ms, answers the image A uploaded, ${b.url}`)
  const proxy = await startNginxProxy(work, { one: [a.url], two: [a.url, b.url] }, { probePath: path })
  if (!proxy) {
    console.log('  nginx is not installed: the two-instance figure is left out')
  } else {
    stops.push(() => proxy.stop())
    const before = [await metadataRequests(a.url), await metadataRequests(b.url)]
    const nginxPids = () => [proxy.child.pid, ...childrenOf(proxy.child.pid)]
    const [one, two] = await measure(
      [
        { label: 'one instance', url: proxy.urls.one + path },
        { label: 'two instances', url: proxy.urls.two + path },
      ],
      { A: () => [a.pid], B: () => [b.pid], nginx: nginxPids, postgres: pgPids },
    )
    // B is only ever behind the two-instance listener: its share of that listener's requests.
    const served = [(await metadataRequests(a.url)) - before[0], (await metadataRequests(b.url)) - before[1]]
    const f2 = figure({
      group: 'metadata (PostgreSQL)',
      figure: 'GET /api/v1/image/:id through nginx, round-robin over 2 instances on one database',
      value: two.rps,
      unit: 'req/s',
      reference: 'one instance behind the same nginx',
      refValue: one.rps,
      note:
        `p99 ${two.p99Ms.toFixed(1)} vs ${one.p99Ms.toFixed(1)} ms; runs ${two.runs.join('/')} vs ${one.runs.join('/')}; ` +
        `requests counted by A ${served[0]}, by B ${served[1]} (B only in the two-instance runs); ` +
        `CPU us/request: two [${cpuText(two)}], one [${cpuText(one)}]` +
        (one.errors + two.errors ? `; ${one.errors + two.errors} errors` : ''),
    })
    printFigure(f2)
    const errors = one.errors + two.errors
    const ratio = two.rps / one.rps
    console.log(
      `\n  What ${m.cores} cores allow one to conclude: wrk, nginx, PostgreSQL and both instances share them, so a second\n` +
        '  instance adds no CPU, only a second event loop competing for the same cores: this is not a scaling figure.\n' +
        `  What it shows: two instances on one database (each with its own cache, kept coherent by the change feed)\n` +
        `  answer the route together at ${ratio.toFixed(2)}x the rate of one behind the same proxy, with ` +
        `${errors ? `${errors} errors` : 'no errors'}: ` +
        (ratio >= 0.7 && !errors
          ? 'the shared-state machinery does not collapse throughput.\n'
          : "LOWER than one instance by more than the second event loop explains: look at the instances' logs.\n") +
        '  How far it scales needs cores (or machines) per instance to measure.',
    )
  }
}

const work = tempDir('imghost-bench-pg-')
const stops: (() => Promise<void>)[] = []
let code = 0
try {
  await main(work, stops)
  console.log(`\ndone in ${((performance.now() - began) / 1000).toFixed(0)} s`)
} catch (error) {
  console.error(error)
  code = 1
} finally {
  // Last started, first stopped: the proxy and the instances before the cluster under them.
  for (const stop of stops.reverse()) await stop().catch((error) => console.error('stopping:', error))
  if (args.keep) console.log(`kept ${work}`)
  else rmSync(work, { recursive: true, force: true })
}
process.exit(code)
