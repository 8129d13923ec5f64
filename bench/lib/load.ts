import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, runJson } from './proc'
import { median } from './stats'

export interface LoadResult {
  rps: number
  p50Ms: number
  p99Ms: number
  requests: number
  /** Responses that were not 2xx/3xx, plus socket errors. */
  errors: number
}

export type LoadTool = 'wrk' | 'autocannon'

/** wrk when it is on PATH (preferred: C, one thread, little CPU per request), else autocannon from node_modules. */
export function pickLoadTool(): LoadTool {
  const forced = process.env.BENCH_LOAD_TOOL
  if (forced === 'wrk' || forced === 'autocannon') return forced
  return Bun.which('wrk') ? 'wrk' : 'autocannon'
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 }
const toMs = (text: string) => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim())
  return m ? Number(m[1]) * UNIT_MS[m[2]] : NaN
}

async function wrk(url: string, connections: number, seconds: number, script?: string): Promise<LoadResult> {
  // One wrk thread: the server gets the other core of a two-core machine.
  const scriptArgs = script ? ['-s', script] : []
  const child = Bun.spawn(
    ['wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s', ...scriptArgs, url],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const [out, err] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  if (child.exitCode !== 0) throw new Error(`wrk failed: ${err || out}`)
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN)
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN)
  const p50 = toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? '')
  const p99 = toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? '')
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  const socketErrors = sock ? sock.slice(1).reduce((s, n) => s + Number(n), 0) : 0
  return { rps, p50Ms: p50, p99Ms: p99, requests, errors: non2xx + socketErrors }
}

async function autocannon(url: string, connections: number, seconds: number): Promise<LoadResult> {
  // A separate Node process, so the generator never shares the server's event loop.
  const cli = join(ROOT, 'node_modules/autocannon/autocannon.js')
  if (!existsSync(cli)) throw new Error('neither wrk nor autocannon is installed: apt-get install wrk, or npm install')
  const r = await runJson<any>(['node', cli, '--json', '-c', String(connections), '-d', String(seconds), url], {
    timeoutMs: (seconds + 30) * 1000,
  })
  return {
    rps: r.requests.total / (r.duration || seconds),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    requests: r.requests.total,
    errors: (r.non2xx ?? 0) + (r.errors ?? 0) + (r.timeouts ?? 0),
  }
}

/** `script`: a wrk Lua script (e.g. one that makes each request's path); wrk only. */
export async function load(
  tool: LoadTool,
  url: string,
  connections: number,
  seconds: number,
  script?: string,
): Promise<LoadResult> {
  if (script && tool !== 'wrk') throw new Error('a request script needs wrk')
  return tool === 'wrk' ? wrk(url, connections, seconds, script) : autocannon(url, connections, seconds)
}

export interface Target {
  label: string
  url: string
}

export interface Compared {
  label: string
  url: string
  /** Median of the rounds. */
  rps: number
  p50Ms: number
  p99Ms: number
  runs: number[]
  errors: number
}

/**
 * Loads each target for `seconds`, `rounds` times, interleaved (A B C A B C ...) so drift on a shared machine hits
 * every target alike, after one short warm-up each. Reports medians.
 */
export async function compare(
  tool: LoadTool,
  targets: Target[],
  opts: { connections: number; seconds: number; rounds: number; warmup: number },
) {
  for (const t of targets) await load(tool, t.url, opts.connections, opts.warmup)
  const results = new Map(targets.map((t) => [t.label, [] as LoadResult[]]))
  for (let round = 0; round < opts.rounds; round++) {
    for (const t of targets) results.get(t.label)!.push(await load(tool, t.url, opts.connections, opts.seconds))
  }
  return targets.map((t): Compared => {
    const runs = results.get(t.label)!
    return {
      label: t.label,
      url: t.url,
      rps: median(runs.map((r) => r.rps)),
      p50Ms: median(runs.map((r) => r.p50Ms)),
      p99Ms: median(runs.map((r) => r.p99Ms)),
      runs: runs.map((r) => Math.round(r.rps)),
      errors: runs.reduce((s, r) => s + r.errors, 0),
    }
  })
}
