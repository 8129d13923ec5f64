/**
 * How a pool starts one worker and talks to it: a process (processWorkers) or a Worker thread (threadWorkers). The
 * pool (pool.ts) is the same for both; the handle hides the transport.
 */
import { readFileSync } from 'node:fs'
import { setPriority } from 'node:os'
import type { PoolMessage, WorkerMessage } from './protocol'

export interface WorkerHandle {
  /** `transfer`: buffers moved to the worker rather than copied, where the transport can. */
  send(message: PoolMessage, transfer?: Transferable[]): void
  /** Ends the worker; `force` for one that must stop now (a budget breach), whatever it is doing. */
  stop(force: boolean): void
  readonly exited: Promise<void>
  /** The process id; null for a thread, which runs in this process. */
  readonly pid: number | null
  /** Resident memory of the worker alone, where it can be read (a process on Linux); else null. */
  memory(): number | null
}

/** What a handle tells its pool: each message, and the worker's end (once, however it ended). */
export interface WorkerEvents {
  message(message: WorkerMessage): void
  exit(detail: string): void
}

export type StartWorker = (events: WorkerEvents) => WorkerHandle

/** How much lower than the server's a worker process's CPU priority is (nice). */
export const WORKER_NICENESS = 10

const RSS_LINE = /^VmRSS:\s+(\d+)\s+kB$/m

/** Resident memory of a process from /proc (Linux); null where there is none, which leaves the memory bound to the decoders' own checks. */
function residentBytes(pid: number): number | null {
  try {
    const kb = RSS_LINE.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]
    return kb ? Number(kb) * 1024 : null
  } catch {
    return null
  }
}

/**
 * Workers as processes, for work in native threads (libvips, librsvg) that `Worker.terminate()` cannot stop: a process
 * can be killed at once and gives all its memory back. `command` starts a Bun process that calls serveJobs.
 */
export function processWorkers(opts: {
  command: string[]
  env: Record<string, string | undefined>
  /** Working directory of the processes (default: the server's). */
  cwd?: string
}): StartWorker {
  return (events) => {
    const child = Bun.spawn(opts.command, {
      env: opts.env,
      cwd: opts.cwd,
      stdio: ['ignore', 'inherit', 'inherit'],
      ipc: (message: WorkerMessage) => events.message(message),
      onExit: (_, code, signal) => events.exit(signal ? `killed by ${signal}` : `code ${code}`),
    })
    // Below the server's own priority: a worker busy with a slow file never takes the CPU from the event loop.
    try {
      setPriority(child.pid, WORKER_NICENESS)
    } catch {
      // Not permitted here: the workers run at the server's priority.
    }
    return {
      send: (message) => child.send(message),
      stop: (force) => child.kill(force ? 'SIGKILL' : 'SIGTERM'),
      exited: child.exited.then(() => {}),
      pid: child.pid,
      memory: () => residentBytes(child.pid),
    }
  }
}

/**
 * Workers as Bun Worker threads, for JavaScript and wasm work (the classifier's model), which `terminate()` stops and
 * whose start is cheaper than a process's. `url` is a module that calls serveJobs.
 */
export function threadWorkers(url: URL): StartWorker {
  return (events) => {
    const worker = new Worker(url)
    let crash = ''
    worker.onmessage = (event: MessageEvent<WorkerMessage>) => events.message(event.data)
    // An uncaught error ends the thread; its message says more than the exit code that follows.
    worker.onerror = (event: ErrorEvent) => {
      crash = `crashed: ${event.message}`
      worker.terminate()
    }
    const exited = new Promise<void>((resolve) =>
      worker.addEventListener('close', (event) => {
        events.exit(crash || `code ${(event as CloseEvent).code}`)
        resolve()
      }),
    )
    return {
      send(message, transfer = []) {
        try {
          worker.postMessage(message, { transfer })
        } catch {
          // Native memory cannot be moved (a buffer of sharp's, when media runs in this process: the CLI, tests); it
          // is copied instead.
          worker.postMessage(message)
        }
      },
      stop: () => worker.terminate(),
      exited,
      pid: null,
      memory: () => null,
    }
  }
}
