/**
 * Preloaded into the service by the scale bench (`bun --preload bench/lib/server-probe.ts src/index.ts`); each part
 * only when its variable is set, else nothing.
 *
 * BENCH_LAG_FILE: a 1 ms interval timer inside the server process, whose every late turn (a gap of more than 2 ms
 * between two turns: the event loop held by something else) is appended to that file as
 * `<end, epoch ms> <gap ms> <this thread's CPU ms in the gap>`. The CPU column tells a block (CPU close to the gap) from
 * the process waiting for a core on a loaded machine (CPU far below it). The bench charges each gap to the requests it
 * overlaps (bench/lib/lag.ts).
 *
 * BENCH_SQL_FILE: every SQLite statement that takes 2 ms or more, appended to that file as one JSON line
 * `{ end, ms, sql, worker }` (its parameters written in; `worker`: run on a Worker's thread, off the event loop), so
 * the bench can name each read's slow queries and ask SQLite for their plans (PostgreSQL logs its own: auto_explain,
 * bench/scale/index.ts). Workers the service starts get this module preloaded too, for their statements.
 */
import { Database } from 'bun:sqlite'
import { appendFileSync } from 'node:fs'
import { isMainThread } from 'node:worker_threads'

const SLOW_MS = 2
const epochNow = () => performance.timeOrigin + performance.now()

const lagFile = process.env.BENCH_LAG_FILE
// The event loop of the server is the main thread's.
if (lagFile && isMainThread) {
  const cpuMs = () => {
    const { user, system } = process.threadCpuUsage()
    return (user + system) / 1000
  }
  let last = performance.now()
  let lastCpu = cpuMs()
  setInterval(() => {
    const now = performance.now()
    const cpu = cpuMs()
    const gap = now - last
    if (gap > SLOW_MS)
      appendFileSync(
        lagFile,
        `${(performance.timeOrigin + now).toFixed(2)} ${gap.toFixed(2)} ${(cpu - lastCpu).toFixed(2)}\n`,
      )
    last = now
    lastCpu = cpu
  }, 1).unref()
}

const sqlFile = process.env.BENCH_SQL_FILE
if (sqlFile) {
  if (isMainThread) {
    // Bun preloads only into the main thread: each Worker the service starts is given this module as well.
    const probe = import.meta.path
    const Base = globalThis.Worker
    globalThis.Worker = class extends Base {
      constructor(url: string | URL, options: WorkerOptions & { preload?: string[] } = {}) {
        super(url, { ...options, preload: [...(options.preload ?? []), probe] } as WorkerOptions)
      }
    } as typeof Worker
  }
  const timed = Symbol('timed')
  type Statement = Record<string, unknown> & { [timed]?: true; toString(): string }
  /** Times the statement's runs (drizzle and the service call all, get, run or values on prepared statements). */
  const time = (statement: Statement) => {
    if (statement[timed]) return statement
    statement[timed] = true
    for (const name of ['all', 'get', 'run', 'values']) {
      const run = statement[name]
      if (typeof run !== 'function') continue
      statement[name] = function (this: Statement, ...args: unknown[]) {
        const t = performance.now()
        try {
          return run.apply(this, args)
        } finally {
          const ms = performance.now() - t
          if (ms >= SLOW_MS)
            appendFileSync(
              sqlFile,
              `${JSON.stringify({ end: epochNow(), ms, sql: this.toString(), worker: !isMainThread })}\n`,
            )
        }
      }
    }
    return statement
  }
  for (const method of ['prepare', 'query'] as const) {
    const original = Database.prototype[method] as unknown as (...args: unknown[]) => Statement
    ;(Database.prototype as unknown as Record<string, unknown>)[method] = function (
      this: Database,
      ...args: unknown[]
    ) {
      return time(original.apply(this, args))
    }
  }
}
