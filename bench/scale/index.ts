/**
 * The scale group (`npm run bench -- --only=scale`, issue 34): the service on a seeded library of 10,000 rows beside
 * the same service on one of `rows` (default 1,000,000), on SQLite and on PostgreSQL, every read path side by side
 * (median of 7, interleaved), the longest event-loop block of each read on the large one (a probe timer inside the
 * server process), /healthz while 8 visitors read, start to healthy, and background work. See bench/README.md.
 */

import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { type PgCluster, startPgCluster } from '../../test/pg-cluster'
import { type AppProcess, appEnv, startApp } from '../lib/app'
import type { Fixtures } from '../lib/fixtures'
import type { Gap } from '../lib/lag'
import { BUN, cpuMs, freePort, memoryOf, ROOT, runJson, runMeasured } from '../lib/proc'
import { cell, type Figure, figure, fmt } from '../lib/report'
import { median, sleep } from '../lib/stats'
import { type Library, prepareLibrary, START_TIMEOUT_MS, sqlitePath } from './library'
import { slowQueriesPg, slowQueriesSqlite } from './queries'
import { measureReads, type ReadResult, SEARCH_WORD, type Site, siteOf } from './reads'

export type Engine = 'sqlite' | 'pg'

export interface ScaleContext {
  work: string
  fixtures: Fixtures
  add(f: Figure): void
  section(title: string): void
  raw: Record<string, unknown>
  /** The large library's rows (the small one has SMALL). */
  rows: number
  engines: Engine[]
  /** Libraries are kept here and used again by later runs (seeding a million rows takes minutes); else in `work`. */
  keepDir?: string
  /** What to measure of SCALE_PARTS (all by default). */
  parts: ReadonlySet<ScalePart>
  /** The SQLite libraries of this run, once seeded: the PostgreSQL pass measures migrate-db from them. */
  sqliteLibraries?: Library[]
}

export const SMALL = 10_000
/** The sections of the group: `--parts=` picks some (reads alone take ~15 min, the commands at 1M up to 45). */
export const SCALE_PARTS = ['reads', 'load', 'startup', 'background', 'commands'] as const
export type ScalePart = (typeof SCALE_PARTS)[number]
const SERVER_PROBE = join(ROOT, 'bench/lib/server-probe.ts')
/** The targets of issue 34. */
const TARGET = { ratio: 3, blockMs: 20, healthzMs: 100, rateRatio: 0.5, startMs: 1500 }

export const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const rowsText = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`)

/** Where an engine's libraries live, and what their processes need (PostgreSQL: a database per library). */
interface EngineSetup {
  engine: Engine
  /** What a process on a new database `name` needs (SQLite: nothing, the data directory holds it). */
  envFor(name: string): Promise<Record<string, string>>
  /** The slow statements of each read on `site`, with their plans, as Markdown. */
  slowQueries(reads: ReadResult[], site: Site): string
  stop(): Promise<void>
}

async function engineSetup(engine: Engine): Promise<EngineSetup> {
  if (engine === 'sqlite')
    return {
      engine,
      envFor: async () => ({}),
      slowQueries: (reads, site) => slowQueriesSqlite(reads, site.label, site.sqlFile, sqlitePath(site.lib)),
      stop: async () => {},
    }
  // A throwaway cluster (as the tests start one); kept libraries need it kept too, which a cluster is not: on
  // PostgreSQL the libraries are seeded again each run.
  const cluster: PgCluster = await startPgCluster()
  // Interrupted, the bench exits (lib/proc.ts): the cluster runs detached (pg_ctl), so it is stopped then too
  // (`stop` is synchronous: pg_ctl stop, then its directory removed).
  const stopOnExit = () => void cluster.stop()
  process.on('exit', stopOnExit)
  const admin = new SQL(cluster.url)
  // pg_ctl writes the server's log beside the data directory (test/pg-cluster.ts).
  const [{ data_directory }] = await admin.unsafe('SHOW data_directory')
  const logFile = join(data_directory, '..', 'log')
  return {
    engine,
    async envFor(name) {
      await admin.unsafe(`CREATE DATABASE ${name}`)
      // Statements of 20 ms or more are logged with their plans and actual row counts (auto_explain, in contrib).
      for (const setting of [
        "session_preload_libraries = 'auto_explain'",
        'auto_explain.log_min_duration = 20',
        'auto_explain.log_analyze = on',
        'auto_explain.log_timing = off',
      ])
        await admin.unsafe(`ALTER DATABASE ${name} SET ${setting}`)
      const url = new URL(cluster.url)
      url.pathname = `/${name}`
      return {
        DATABASE_URL: url.toString(),
        VARIANT_SECRET: 'bench-variant-secret-'.padEnd(48, 'v'),
        TOTP_KEY: 'bench-totp-key-'.padEnd(48, 't'),
        STORAGE: 'local',
      }
    },
    slowQueries: (reads, site) => slowQueriesPg(reads, site.label, logFile),
    async stop() {
      await admin.close()
      await cluster.stop()
      process.off('exit', stopOnExit)
    },
  }
}

/** A library of `rows`, seeded now, or the one a previous run kept (SQLite only). */
async function library(ctx: ScaleContext, setup: EngineSetup, rows: number): Promise<Library> {
  const base = ctx.keepDir && setup.engine === 'sqlite' ? ctx.keepDir : ctx.work
  const dataDir = join(base, `${setup.engine}-${rows}`)
  const saved = join(base, `${setup.engine}-${rows}.json`)
  if (base === ctx.keepDir && existsSync(saved) && existsSync(dataDir)) {
    console.log(`  ${setup.engine} ${rowsText(rows)}: kept library ${dataDir}`)
    return (await Bun.file(saved).json()) as Library
  }
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(base, { recursive: true })
  const lib = await prepareLibrary({
    engine: setup.engine,
    rows,
    dataDir,
    // The owner stores half a million images: a quota must not refuse their uploads (the check still runs).
    env: { ...(await setup.envFor(`imghost_${rows}`)), VERIFIED_STORAGE_LIMIT: String(2 ** 50) },
    source: ctx.fixtures.tinyJpeg,
    log: join(ctx.work, `seed-${setup.engine}-${rows}.log`),
    files: rows > 1_000_000 ? 'none' : 'link',
  })
  await Bun.write(saved, JSON.stringify(lib))
  return lib
}

async function startSite(ctx: ScaleContext, lib: Library, label: string): Promise<Site> {
  const probes = {
    lagFile: join(ctx.work, `lag-${lib.engine}-${lib.rows}.txt`),
    sqlFile: join(ctx.work, `sql-${lib.engine}-${lib.rows}.txt`),
  }
  const app = await startApp({
    dataDir: lib.dataDir,
    log: join(ctx.work, `app-${lib.engine}-${lib.rows}.log`),
    env: { ...lib.env, BENCH_LAG_FILE: probes.lagFile, BENCH_SQL_FILE: probes.sqlFile },
    preload: SERVER_PROBE,
    startTimeoutMs: START_TIMEOUT_MS,
  })
  const rss = memoryOf(app.pid).rss
  // Reads are measured once the start-up work behind /healthz is done (the sweeps of what expired or was left while
  // stopped, a migration's counting): what it takes is a figure of its own, printed here. The seed's expired images
  // (1%) are swept by then too: until they are, every total takes off what is left of them, and on PostgreSQL the
  // sweep waits on the database more than it works, so the process may look idle while it runs.
  const busyMs = (await untilIdle(app.pid)) + (await untilSwept(lib))
  const vacuumMs = lib.engine === 'pg' ? await untilVacuumed(lib) : 0
  console.log(
    `  ${label}: healthy in ${Math.round(app.startMs)} ms (first start on it), RSS ${(rss / 2 ** 20).toFixed(0)} MB; ` +
      `its start-up work in the background took ${(busyMs / 1000).toFixed(0)} s more` +
      (lib.engine === 'pg'
        ? `, PostgreSQL's autovacuum of the swept rows ${(vacuumMs / 1000).toFixed(0)} s after that`
        : ''),
  )
  return siteOf(label, app, lib, probes)
}

/**
 * Waits until a process spends under 10% of a core over 2 s (the probe alone takes 3-5%), at most 15 min; the time it
 * took.
 */
async function untilIdle(pid: number, maxMs = 900_000): Promise<number> {
  const since = performance.now()
  for (;;) {
    const before = cpuMs(pid).self
    await sleep(2000)
    if (cpuMs(pid).self - before < 200 || performance.now() - since > maxMs) return performance.now() - since
  }
}

/** Waits until the library holds no expired image (the server's sweep removes them), at most 15 min; the time it took. */
async function untilSwept(lib: Library, maxMs = 900_000): Promise<number> {
  const since = performance.now()
  const expired = () => `SELECT count(*) AS n FROM images WHERE expires_at IS NOT NULL AND expires_at <= ${Date.now()}`
  const pg = lib.engine === 'pg' ? new SQL(lib.env.DATABASE_URL!, { max: 1 }) : null
  const sqlite = pg ? null : new Database(sqlitePath(lib), { readonly: true })
  try {
    for (;;) {
      const n = pg ? Number((await pg.unsafe(expired()))[0].n) : (sqlite!.query(expired()).get() as { n: number }).n
      if (n === 0 || performance.now() - since > maxMs) return performance.now() - since
      await sleep(1000)
    }
  } finally {
    await pg?.close()
    sqlite?.close()
  }
}

/**
 * Waits until at most 1,000 or 1% of the images table's rows are dead versions (PostgreSQL), at most 15 min; the time
 * it took. Reads through an index visit the versions a sweep left until a vacuum removes them; the service sets
 * images' autovacuum to act from 1,000 + 0.5% dead rows (migrations-pg/0014), so a steady host stays under that. The
 * statistics reach pg_stat_user_tables up to 10 s late, so the first look is 15 s in.
 */
async function untilVacuumed(lib: Library, maxMs = 900_000): Promise<number> {
  const since = performance.now()
  const pg = new SQL(lib.env.DATABASE_URL!, { max: 1 })
  const dirty = `SELECT n_dead_tup > greatest(1000, n_live_tup / 100) AS dirty FROM pg_stat_user_tables WHERE relname = 'images'`
  try {
    do await sleep(15_000)
    while ((await pg.unsafe(dirty))[0].dirty && performance.now() - since < maxMs)
    return performance.now() - since
  } finally {
    await pg.close()
  }
}

/**
 * A read's longest event-loop block: the stall of the probe's timer during which the server's main thread spent the most
 * CPU. On a shared machine a stall also includes time spent waiting for a core; the CPU in it is the part the server
 * held the loop for (on a quiet machine the two agree). Both are shown.
 */
const worstBlock = (blocks: Gap[]) => blocks.reduce((w, g) => (g.cpuMs > w.cpuMs ? g : w))

function readFigures(ctx: ScaleContext, engine: Engine, results: ReadResult[], small: string, large: string) {
  for (const r of results) {
    const a = r.sites[large]
    const b = r.sites[small]
    const block = worstBlock(a.blocks)
    const ratio = a.medianMs / b.medianMs
    ctx.add(
      figure({
        group: `scale reads (${engine})`,
        figure: `${r.read}, ${large}`,
        value: a.medianMs,
        unit: 'ms',
        reference: `the same read at ${small}`,
        refValue: b.medianMs,
        target: `<= ${TARGET.ratio}x; block <= ${TARGET.blockMs} ms`,
        met: ratio <= TARGET.ratio && block.cpuMs <= TARGET.blockMs,
        note: `longest event-loop block ${block.cpuMs.toFixed(1)} ms CPU (stall ${block.gapMs.toFixed(1)} ms); runs ${a.runs.join('/')} vs ${b.runs.join('/')}; ${a.path}`,
      }),
    )
  }
}

/** The reads side by side as Markdown (bench/results/scale-<engine>.md; docs/performance.md's table is made from it). */
function readTable(results: ReadResult[], small: string, large: string) {
  const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2))
  const lines = [
    `| read | ${small} | ${large} | ratio | longest block at ${large}, CPU (stall) |`,
    '|---|---:|---:|---:|---:|',
  ]
  for (const r of results) {
    const a = r.sites[large]
    const b = r.sites[small]
    const block = worstBlock(a.blocks)
    lines.push(
      `| ${r.read.replace(/\|/g, '\\|')} | ${ms(b.medianMs)} ms | ${ms(a.medianMs)} ms | ${(a.medianMs / b.medianMs).toFixed(2)}x | ${block.cpuMs.toFixed(1)} (${block.gapMs.toFixed(0)}) ms |`,
    )
  }
  return lines.join('\n')
}

/** The figures other than the reads, as Markdown. */
function otherTable(figures: Figure[]) {
  const lines = ['| figure | value | reference | target | status | detail |', '|---|---:|---:|---|---|---|']
  for (const f of figures.filter((f) => !f.group.startsWith('scale reads')))
    lines.push(
      `| ${[f.figure, fmt(f.value, f.unit), fmt(f.refValue, f.unit), f.target ?? '', f.met ? 'met' : '**missed**', f.note ?? ''].map(cell).join(' | ')} |`,
    )
  return lines.join('\n')
}

/** The worst /healthz (paced probe, every 10 ms) while 8 visitors page the gallery and search, and their read rate. */
async function underLoad(ctx: ScaleContext, site: Site, seconds: number) {
  const paths: string[] = []
  const deepest = Math.max(1, Math.ceil(site.pages.gallery / 2))
  for (let i = 0; i < 64; i++) {
    // Pages spread over the first half of the gallery (the same share of it on every library), and searches.
    paths.push(`/api/gallery?page=${1 + Math.floor((((i * 37) % 64) / 64) * deepest)}&limit=40`)
    paths.push(`/api/search?q=${i % 2 ? SEARCH_WORD : 'harbour'}&page=${1 + (i % 3)}`)
  }
  const pathsFile = join(ctx.work, `paths-${site.label}.json`)
  await Bun.write(pathsFile, JSON.stringify(paths))
  const [readers, probe] = await Promise.all([
    runJson<{ reads: number; errors: number; rate: number; p50Ms: number; p99Ms: number }>(
      [BUN, 'bench/scale/readers.ts', site.app.url, '8', String(seconds), pathsFile],
      { timeoutMs: (seconds + 120) * 1000 },
    ),
    runJson<{ count: number; failures: number; p50Ms: number; p99Ms: number; maxMs: number }>(
      [BUN, 'bench/ref/probe.ts', `${site.app.url}/healthz`, '10', String(seconds)],
      { timeoutMs: (seconds + 120) * 1000 },
    ),
  ])
  return { readers, probe }
}

async function loadFigures(ctx: ScaleContext, engine: Engine, small: Site, large: Site) {
  ctx.section(`${engine}: /healthz while 8 visitors page the gallery and search (load ${load()})`)
  const runs: Record<string, Awaited<ReturnType<typeof underLoad>>[]> = { [small.label]: [], [large.label]: [] }
  for (let round = 0; round < 2; round++) for (const s of [small, large]) runs[s.label].push(await underLoad(ctx, s, 8))
  ctx.raw[`scale load ${engine}`] = runs
  const worst = (label: string) => Math.max(...runs[label].map((r) => r.probe.maxMs))
  const rate = (label: string) => median(runs[label].map((r) => r.readers.rate))
  const rateText = (label: string) => runs[label].map((r) => r.readers.rate.toFixed(1)).join('/')
  ctx.add(
    figure({
      group: `scale load (${engine})`,
      figure: `worst /healthz while 8 visitors read, ${large.label}`,
      value: worst(large.label),
      unit: 'ms',
      reference: `the same at ${small.label}`,
      refValue: worst(small.label),
      target: `< ${TARGET.healthzMs} ms`,
      met: worst(large.label) < TARGET.healthzMs,
      note: `probe p99 ${runs[large.label].map((r) => r.probe.p99Ms.toFixed(0)).join('/')} ms; 2 runs of 8 s each; load ${load()}`,
    }),
  )
  ctx.add(
    figure({
      group: `scale load (${engine})`,
      figure: `the 8 visitors' read rate, ${large.label}`,
      value: rate(large.label),
      unit: 'reads/s',
      reference: `the same at ${small.label}`,
      refValue: rate(small.label),
      target: `>= ${TARGET.rateRatio}x`,
      met: rate(large.label) / rate(small.label) >= TARGET.rateRatio,
      note: `runs ${rateText(large.label)} vs ${rateText(small.label)}; p50 ${runs[large.label][0].readers.p50Ms.toFixed(0)} vs ${runs[small.label][0].readers.p50Ms.toFixed(0)} ms`,
    }),
  )
}

/** Spawn to the first 200 on /healthz, each library in turn, 3 times (the service as it runs: no probe). */
async function startupFigures(ctx: ScaleContext, engine: Engine, small: Library, large: Library) {
  ctx.section(`${engine}: start to healthy (load ${load()})`)
  const times: Record<string, number[]> = { small: [], large: [] }
  for (let i = 0; i < 3; i++) {
    for (const [key, lib] of [
      ['small', small],
      ['large', large],
    ] as const) {
      const app: AppProcess = await startApp({
        dataDir: lib.dataDir,
        log: join(ctx.work, `start-${engine}-${lib.rows}.log`),
        env: lib.env,
        startTimeoutMs: START_TIMEOUT_MS,
      })
      times[key].push(app.startMs)
      await app.stop()
    }
  }
  ctx.raw[`scale startup ${engine}`] = times
  ctx.add(
    figure({
      group: `scale startup (${engine})`,
      figure: `start to healthy, ${rowsText(large.rows)} rows (median of 3)`,
      value: median(times.large),
      unit: 'ms',
      reference: `the same at ${rowsText(small.rows)}`,
      refValue: median(times.small),
      target: `< ${TARGET.startMs} ms`,
      met: median(times.large) < TARGET.startMs,
      note: `runs ${times.large.map((t) => t.toFixed(0)).join(' / ')} vs ${times.small.map((t) => t.toFixed(0)).join(' / ')} ms; load ${load()}`,
    }),
  )
}

/** The jobs the server runs in the background, and how many rows each finds to work on, the same on every library. */
const JOBS = [
  { job: 'view-flush', count: 10_000, what: 'view flush, 10,000 distinct images viewed' },
  { job: 'expiry-sweep', count: 1000, what: 'expiry sweep, 1,000 expired images' },
  { job: 'orphan-sweep', count: 0, what: 'orphan sweep (every row and every stored file)' },
  { job: 'phash-backfill', count: 100, what: 'perceptual hash backfill, 100 images', readsFiles: true },
  { job: 'rescan', count: 20, what: 'rescan of 20 images waiting for a scan', readsFiles: true },
] as const

interface JobRun {
  ms: number
  blockCpuMs: number
  blockMs: number
  peakRss: number
}

/** A command (check, backup, migrate-db) running longer is killed and reported unfinished. */
const COMMAND_TIMEOUT_MS = 15 * 60_000

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`

/** Each background job once on each library (the service stopped), in a process of its own under the probe. */
async function backgroundFigures(ctx: ScaleContext, engine: Engine, small: Library, large: Library) {
  ctx.section(`${engine}: background work, each job once per library (load ${load()})`)
  const runs: Record<string, JobRun[]> = {}
  // Jobs that read the files of the rows they work on need the seeded files.
  const jobs = JOBS.filter((j) => large.files !== 'none' || !('readsFiles' in j))
  for (const { job, count, what } of jobs) {
    const pair: JobRun[] = []
    for (const lib of [small, large]) {
      const lagFile = join(ctx.work, `lag-job-${engine}-${lib.rows}-${job}.txt`)
      pair.push(
        await runJson<JobRun>([BUN, '--preload', SERVER_PROBE, 'bench/scale/job.ts', job, String(count)], {
          env: appEnv(lib.dataDir, freePort(), { ...lib.env, BENCH_LAG_FILE: lagFile, BENCH_SOURCE_ID: lib.sourceId }),
          timeoutMs: 3_600_000,
        }),
      )
    }
    runs[job] = pair
    const [b, a] = pair
    ctx.add(
      figure({
        group: `scale background (${engine})`,
        figure: `${what}, ${rowsText(large.rows)} rows: one run`,
        value: a.ms,
        unit: 'ms',
        reference: `the same at ${rowsText(small.rows)} rows`,
        refValue: b.ms,
        target: `block <= ${TARGET.blockMs} ms`,
        met: a.blockCpuMs <= TARGET.blockMs,
        note: `longest event-loop block ${a.blockCpuMs.toFixed(1)} ms CPU (stall ${a.blockMs.toFixed(0)} ms) vs ${b.blockCpuMs.toFixed(1)}; peak RSS ${mb(a.peakRss)} vs ${mb(b.peakRss)}`,
      }),
    )
  }
  // Above a million rows the commands take hours (every file read or copied): left to the 1M runs.
  if (large.rows > 1_000_000)
    console.log(`  cli check and cli backup are measured at 1M rows, not at ${rowsText(large.rows)}`)
  else if (ctx.parts.has('commands')) await commandFigures(ctx, engine, small, large, runs)
  ctx.raw[`scale background ${engine}`] = runs
}

/** `cli check` and `cli backup` on each library: time and peak memory (streamed work keeps it flat). */
async function commandFigures(
  ctx: ScaleContext,
  engine: Engine,
  small: Library,
  large: Library,
  runs: Record<string, unknown>,
) {
  const commands = [
    { name: 'check', args: () => ['check'], what: '`cli check` (every row, every stored file)' },
    {
      name: 'backup',
      args: (lib: Library) => ['backup', join(ctx.work, `backup-${engine}-${lib.rows}.tar`)],
      what: '`cli backup` to a tar file (the database and every file)',
    },
  ]
  // Their temp copies (a backup's) under the run's directory, removed with it even when a command is killed.
  const tmp = join(ctx.work, 'tmp')
  mkdirSync(tmp, { recursive: true })
  for (const c of commands) {
    const pair = []
    for (const lib of [small, large]) {
      pair.push(
        await runMeasured([BUN, 'src/cli.ts', ...c.args(lib)], {
          env: appEnv(lib.dataDir, freePort(), { ...lib.env, TMPDIR: tmp }),
          timeoutMs: COMMAND_TIMEOUT_MS,
          okCodes: [0, 2],
        }),
      )
      rmSync(join(ctx.work, `backup-${engine}-${lib.rows}.tar`), { force: true })
    }
    runs[c.name] = pair.map(({ ms, peakRss, timedOut }) => ({ ms, peakRss, timedOut }))
    const [b, a] = pair
    ctx.add(
      figure({
        group: `scale background (${engine})`,
        figure: `${c.what}, ${rowsText(large.rows)} rows: peak RSS`,
        value: a.peakRss / 2 ** 20,
        unit: 'MB',
        reference: `the same at ${rowsText(small.rows)} rows`,
        refValue: b.peakRss / 2 ** 20,
        target: '<= 1.5x (memory does not grow with the library)',
        met: a.peakRss <= 1.5 * b.peakRss && !a.timedOut,
        note: `time ${seconds(a)} vs ${seconds(b)}`,
      }),
    )
  }
}

/** A command's time, or that it was killed unfinished. */
const seconds = (r: { ms: number; timedOut: boolean }) =>
  r.timedOut ? `over ${(COMMAND_TIMEOUT_MS / 1000).toFixed(0)} s (killed unfinished)` : `${(r.ms / 1000).toFixed(1)} s`

/**
 * `cli migrate-db` of the SQLite libraries of this run into new databases of this PostgreSQL cluster: time and peak RSS
 * (a copy that streams keeps it flat).
 */
async function migrateFigures(ctx: ScaleContext, setup: EngineSetup, sqlite: Library[]) {
  ctx.section(`pg: migrate-db from the SQLite libraries (load ${load()})`)
  const runs = []
  for (const lib of sqlite) {
    const env = await setup.envFor(`migrated_${lib.rows}`)
    runs.push(
      await runMeasured([BUN, 'src/cli.ts', 'migrate-db', sqlitePath(lib)], {
        env: appEnv(join(ctx.work, `migrated-${lib.rows}`), freePort(), env),
        timeoutMs: COMMAND_TIMEOUT_MS,
      }),
    )
  }
  ctx.raw['scale migrate-db'] = runs.map(({ ms, peakRss, timedOut }) => ({ ms, peakRss, timedOut }))
  const [b, a] = runs
  ctx.add(
    figure({
      group: 'scale background (pg)',
      figure: `\`cli migrate-db\` of the SQLite library, ${rowsText(sqlite[1].rows)} rows: peak RSS`,
      value: a.peakRss / 2 ** 20,
      unit: 'MB',
      reference: `the same at ${rowsText(sqlite[0].rows)} rows`,
      refValue: b.peakRss / 2 ** 20,
      target: '<= 1.5x (memory does not grow with the library)',
      met: a.peakRss <= 1.5 * b.peakRss && !a.timedOut,
      note: `time ${seconds(a)} vs ${seconds(b)}`,
    }),
  )
}

/** The scale group on one engine. */
async function onEngine(outer: ScaleContext, engine: Engine) {
  // This engine's figures besides the reads, for its section of bench/README.md.
  const mine: Figure[] = []
  const ctx: ScaleContext = {
    ...outer,
    add(f) {
      mine.push(f)
      outer.add(f)
    },
  }
  const loadAtStart = load()
  let reads: ReadResult[] = []
  const setup = await engineSetup(engine)
  try {
    ctx.section(`${engine}: libraries of ${rowsText(SMALL)} and ${rowsText(ctx.rows)} rows (load ${load()})`)
    const libs: Library[] = []
    for (const rows of [SMALL, ctx.rows]) {
      const lib = await library(ctx, setup, rows)
      libs.push(lib)
      console.log(
        `  ${engine} ${rowsText(rows)}: seeded ${lib.seed.rows} rows, ${lib.seed.accounts} accounts, ${lib.seed.albums} albums, ` +
          `${lib.seed.linkedFiles} files linked in ${(lib.seed.ms / 1000).toFixed(1)} s`,
      )
    }
    ctx.raw[`scale seed ${engine}`] = libs.map((l) => l.seed)
    const [smallLib, largeLib] = libs
    const small = await startSite(ctx, smallLib, rowsText(SMALL))
    const large = await startSite(ctx, largeLib, rowsText(ctx.rows))
    const parts = ctx.parts
    try {
      if (parts.has('reads')) {
        ctx.section(`${engine}: reads, median of 7, interleaved (load ${load()})`)
        // PostgreSQL: six warm-up requests per connection of the server's pool (Bun.SQL's 10), so the reads are
        // measured as a server that has run a while answers them: on a fresh pool the first ten runs of a read took
        // ~40-120 ms more at 1M than the runs after them (by hand, 2026-11-28), and from the sixth run of a statement
        // on a connection PostgreSQL may plan it without its values (src/db/pg.ts), which the first runs never show.
        reads = await measureReads([small, large], 7, engine === 'pg' ? 60 : 2)
        ctx.raw[`scale reads ${engine}`] = reads
        readFigures(ctx, engine, reads, small.label, large.label)
        const table = readTable(reads, small.label, large.label)
        await Bun.write(join(ROOT, `bench/results/scale-${engine}.md`), `Load average ${load()}\n\n${table}\n`)
        await Bun.write(join(ROOT, `bench/results/scale-${engine}-queries.md`), setup.slowQueries(reads, large))
      }
      if (parts.has('load')) await loadFigures(ctx, engine, small, large)
    } finally {
      await small.app.stop()
      await large.app.stop()
    }
    if (parts.has('startup')) await startupFigures(ctx, engine, smallLib, largeLib)
    if (parts.has('background')) await backgroundFigures(ctx, engine, smallLib, largeLib)
    if (engine === 'sqlite') outer.sqliteLibraries = libs
    else if (outer.sqliteLibraries && parts.has('commands')) await migrateFigures(ctx, setup, outer.sqliteLibraries)
    const title = `### ${engine === 'pg' ? 'PostgreSQL' : 'SQLite'}: ${rowsText(largeLib.rows)} rows against ${rowsText(SMALL)}`
    outer.raw['scale markdown'] =
      `${outer.raw['scale markdown'] ?? ''}${title}\n\nLoad average (1, 5, 15 min) at the start ${loadAtStart}, ` +
      `at the end ${load()}.\n\n${readTable(reads, rowsText(SMALL), rowsText(largeLib.rows))}\n\n${otherTable(mine)}\n\n`
  } finally {
    await setup.stop()
  }
}

/**
 * The reads of every engine of a run side by side (docs/performance.md's table): each read's median on each library,
 * then the load, start and block figures at the large size.
 */
export function performanceTable(raw: Record<string, unknown>, figures: Figure[]) {
  const engines = (['sqlite', 'pg'] as const).filter((e) => raw[`scale reads ${e}`])
  if (engines.length === 0) return ''
  const name = { sqlite: 'SQLite', pg: 'PostgreSQL' }
  const reads = Object.fromEntries(engines.map((e) => [e, raw[`scale reads ${e}`] as ReadResult[]]))
  const labels = Object.fromEntries(engines.map((e) => [e, Object.keys(reads[e][0].sites)]))
  const ms = (n: number | undefined) => (n === undefined ? '–' : fmt(n, 'ms'))
  const head = engines.flatMap((e) => labels[e].map((l) => `${name[e]} ${l}`))
  const lines = [`| read | ${head.join(' | ')} |`, `|---|${head.map(() => '---:').join('|')}|`]
  for (const r of reads[engines[0]]) {
    const cells = engines.flatMap((e) => {
      const same = reads[e].find((x) => x.read === r.read)
      return labels[e].map((l) => ms(same?.sites[l]?.medianMs))
    })
    lines.push(`| ${cell(r.read)} | ${cells.join(' | ')} |`)
  }
  lines.push('', '| at the large size | value | target | status |', '|---|---:|---|---|')
  for (const f of figures.filter((f) => /^scale (load|startup)/.test(f.group)))
    lines.push(
      `| ${cell(`${f.figure} (${f.group.slice(f.group.indexOf('(') + 1, -1)})`)} | ${fmt(f.value, f.unit)} (${fmt(f.refValue, f.unit)} small) | ${cell(f.target ?? '')} | ${f.met ? 'met' : '**missed**'} |`,
    )
  return lines.join('\n')
}

/** The most rows a library of a run's raw results was seeded with. */
export const largestSeeded = (raw: Record<string, unknown>) =>
  Math.max(
    0,
    ...(['sqlite', 'pg'] as const).flatMap((e) =>
      ((raw[`scale seed ${e}`] ?? []) as { rows: number }[]).map((s) => s.rows),
    ),
  )

export async function scaleFigures(ctx: ScaleContext) {
  for (const engine of ctx.engines) await onEngine(ctx, engine)
}
