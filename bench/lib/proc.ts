import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { sleep } from './stats'

export const ROOT = resolve(import.meta.dir, '../..')
/** The project's own Bun (package.json pins it), so the bench runs the same runtime as the service. */
export const BUN = (() => {
  const local = join(ROOT, 'node_modules/.bin/bun')
  return Bun.file(local).size > 0 ? local : process.execPath
})()

const children = new Set<Subprocess>()
let cleanupHooked = false

function hookCleanup() {
  if (cleanupHooked) return
  cleanupHooked = true
  const killAll = () => {
    for (const child of children) {
      try {
        child.kill('SIGKILL')
      } catch {}
    }
  }
  process.on('exit', killAll)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      killAll()
      process.exit(130)
    })
  }
}

/** Spawns a child whose output goes to a log file; it is killed if the bench exits early. */
export function spawnLogged(
  cmd: string[],
  opts: { env?: Record<string, string>; log: string; cwd?: string },
): Subprocess {
  hookCleanup()
  const fd = openSync(opts.log, 'a')
  const child = Bun.spawn(cmd, {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, ...opts.env },
    stdout: fd,
    stderr: fd,
    stdin: 'ignore',
  })
  closeSync(fd)
  children.add(child)
  child.exited.then(() => children.delete(child))
  return child
}

/** Stops a child with SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: Subprocess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  const done = await Promise.race([child.exited.then(() => true), sleep(graceMs).then(() => false)])
  if (!done) {
    child.kill('SIGKILL')
    await child.exited
  }
}

/** Runs a child to completion: its output, exit, wall time and peak RSS (bytes, the kernel's accounting; Bun gives it in bytes). */
async function runChild(cmd: string[], opts: { env?: Record<string, string>; timeoutMs: number }) {
  hookCleanup()
  const t = performance.now()
  const child = Bun.spawn(cmd, {
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    stdout: 'pipe',
    stderr: 'pipe',
    stdin: 'ignore',
  })
  children.add(child)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    child.kill('SIGKILL')
  }, opts.timeoutMs)
  const [out, err] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  clearTimeout(timer)
  children.delete(child)
  const ms = performance.now() - t
  const failed = (codes: number[]) => {
    if (child.exitCode === null || !codes.includes(child.exitCode))
      throw new Error(`${cmd.join(' ')} failed (${child.exitCode ?? child.signalCode}): ${err.slice(-2000)}`)
  }
  return { out, err, ms, peakRss: child.resourceUsage()?.maxRSS ?? Number.NaN, timedOut, failed }
}

/** Runs a child to completion and parses the last line of its stdout as JSON. */
export async function runJson<T>(cmd: string[], opts: { env?: Record<string, string>; timeoutMs: number }): Promise<T> {
  const { out, err, failed } = await runChild(cmd, opts)
  failed([0])
  const last = out.trim().split('\n').pop() ?? ''
  try {
    return JSON.parse(last) as T
  } catch {
    throw new Error(`${cmd.join(' ')} printed no JSON: ${out.slice(-500)} ${err.slice(-500)}`)
  }
}

/**
 * Runs a command to completion (exit 0, or `okCodes`): its wall time, peak RSS and stdout; `timedOut` when it was
 * killed for running past `timeoutMs` (its figures are then those up to the kill).
 */
export async function runMeasured(
  cmd: string[],
  opts: { env?: Record<string, string>; timeoutMs: number; okCodes?: number[] },
) {
  const { out, ms, peakRss, timedOut, failed } = await runChild(cmd, opts)
  if (!timedOut) failed(opts.okCodes ?? [0])
  return { ms, peakRss, out, timedOut }
}

/** A TCP port nobody listens on right now (the OS picks it). */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

/** Resident set size now and its peak (VmHWM), in bytes, from /proc. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
}

/** RSS of `pid` and every process it started (the service's media workers), in bytes, from /proc. */
export function treeRss(pid: number): number {
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // gone meanwhile
    }
  }
  let total = 0
  const visit = (p: number) => {
    try {
      total += memoryOf(p).rss
    } catch {
      return
    }
    for (const child of children.get(p) ?? []) visit(child)
  }
  visit(pid)
  return total
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS = 100

/** CPU ms of a process (`self`) and of its children that have exited and were waited for (`children`). */
export function cpuMs(pid: number) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return {
    self: ((Number(f[11]) + Number(f[12])) * 1000) / TICKS,
    children: ((Number(f[13]) + Number(f[14])) * 1000) / TICKS,
  }
}

/** The processes whose parent is `pid` (from /proc). */
export function childrenOf(pid: number): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid ? [Number(entry)] : []
    } catch {
      return [] // gone meanwhile
    }
  })
}

/** CPU ms of the processes `pid` started (the service's media workers), those running and those gone. */
export const workersMs = (pid: number) =>
  childrenOf(pid).reduce((ms, child) => ms + cpuMs(child).self, cpuMs(pid).children)

/** Resets VmHWM to the current RSS (Linux `clear_refs` 5); false when the kernel refuses. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

/** Polls `url` until it answers 200; returns the milliseconds since `since`, or throws after `timeoutMs`. */
export async function waitHealthy(url: string, since: number, timeoutMs: number, child?: Subprocess): Promise<number> {
  while (performance.now() - since < timeoutMs) {
    if (child && child.exitCode !== null) throw new Error(`process exited (${child.exitCode}) before ${url} answered`)
    try {
      const res = await fetch(url)
      if (res.status === 200) {
        await res.arrayBuffer()
        return performance.now() - since
      }
    } catch {}
    await sleep(5)
  }
  throw new Error(`${url} not healthy after ${timeoutMs} ms`)
}
