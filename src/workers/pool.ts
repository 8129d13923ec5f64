import { readFileSync } from 'node:fs'
import { setPriority } from 'node:os'
import type { Subprocess } from 'bun'

/** A job ran past the pool's time or memory budget; its process was killed. */
export class BudgetError extends Error {
  override name = 'BudgetError'
  constructor(
    readonly budget: 'time' | 'memory',
    message: string,
  ) {
    super(message)
  }
}

/** Every process is busy and the queue is full: try again shortly. */
export class PoolBusyError extends Error {
  override name = 'PoolBusyError'
}

/** A job's process died (crashed, or killed from outside) before answering. */
export class WorkerExitedError extends Error {
  override name = 'WorkerExitedError'
}

/**
 * What a worker process sends back: its value, or an error as plain fields (errors do not survive IPC as classes);
 * before either, a job may send `early` values (part of its result the caller can use while the job goes on).
 */
export type WorkerAnswer =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: SerializedError }
  | { id: number; early: unknown }
export interface SerializedError {
  name: string
  message: string
  code?: string
}
export type WorkerRequest = { id: number; op: string; args: unknown[] }

export interface ProcessPoolOptions {
  /** The command that starts one worker process (a Bun process that answers through IPC, see worker-process.ts). */
  command: string[]
  env: Record<string, string | undefined>
  /** Working directory of the processes (default: the server's). */
  cwd?: string
  /** Processes at most (each runs one job at a time). */
  size: number
  /** Wall time one job may run, counted from its dispatch (queue wait is not counted). */
  timeoutMs: number
  /** Resident memory one worker process may reach while it runs a job. */
  memoryBytes: number
  /** A process idle this long exits; the next job starts a new one. */
  idleMs: number
  /** Jobs waiting at most; beyond it `run` rejects with PoolBusyError. */
  maxQueue: number
  /** How often a running job's process memory is read. */
  memoryPollMs?: number
  /** Told of every job as it starts in a process, in start order (metrics, and the tests of the queue's fairness). */
  onStart?(job: { op: string; owner: string }): void
}

interface Job {
  id: number
  op: string
  args: unknown[]
  /** Whose work it is (an account, a client address): the queue takes turns between owners. */
  owner: string
  /** Its place in the fair queue (start-time fair queuing): the lowest waiting tag starts first. */
  tag: number
  resolve(value: unknown): void
  reject(error: Error): void
  early?(value: unknown): void
}

interface Slot {
  process: Subprocess
  ready: Promise<void>
  job: Job | null
  timers: { deadline?: Timer; memory?: Timer; idle?: Timer }
  /** Why this process was killed, if the pool killed it: the running job fails with this. */
  killedFor: Error | null
}

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
 * A bounded pool of worker processes for work on untrusted bytes. Processes rather than Workers: the work runs in
 * native threads (libvips, librsvg) that `Worker.terminate()` cannot stop, while a process can be killed at once and
 * gives all its memory back. Each process runs one job at a time, so killing it past a budget fails only that job.
 * Processes start on demand and exit when idle, so an idle server holds none.
 */
export function createProcessPool(opts: ProcessPoolOptions) {
  const slots = new Set<Slot>()
  const queue = createFairQueue<Job>()
  let nextId = 1
  let closed = false

  function spawn(): Slot {
    let markReady!: () => void
    let failReady!: (error: Error) => void
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve
      failReady = reject
    })
    ready.catch(() => {})
    const slot: Slot = {
      ready,
      job: null,
      timers: {},
      killedFor: null,
      process: Bun.spawn(opts.command, {
        env: opts.env,
        cwd: opts.cwd,
        stdio: ['ignore', 'inherit', 'inherit'],
        ipc(message: WorkerAnswer | { ready: true }) {
          if ('ready' in message) return markReady()
          const job = slot.job
          if (!job || job.id !== message.id) return
          if ('early' in message) return job.early?.(message.early)
          finish(slot)
          if (message.ok) job.resolve(message.value)
          else job.reject(revive(message.error))
          dispatch()
        },
        onExit() {
          slots.delete(slot)
          clearTimers(slot)
          const error = slot.killedFor ?? new WorkerExitedError('worker process exited')
          failReady(error)
          const job = slot.job
          slot.job = null
          job?.reject(error)
          dispatch()
        },
      }),
    }
    // Below the server's own priority: a worker busy with a slow file never takes the CPU from the event loop.
    try {
      setPriority(slot.process.pid, WORKER_NICENESS)
    } catch {
      // Not permitted here: the workers run at the server's priority.
    }
    slots.add(slot)
    return slot
  }

  function clearTimers(slot: Slot) {
    clearTimeout(slot.timers.deadline)
    clearInterval(slot.timers.memory)
    clearTimeout(slot.timers.idle)
    slot.timers = {}
  }

  function kill(slot: Slot, reason: Error) {
    slot.killedFor = reason
    slot.process.kill('SIGKILL')
  }

  /** The job is settled: stop watching it and let the process idle out if nothing follows. */
  function finish(slot: Slot) {
    clearTimers(slot)
    slot.job = null
    slot.timers.idle = setTimeout(() => {
      if (slot.job === null) slot.process.kill()
    }, opts.idleMs)
  }

  async function start(slot: Slot, job: Job) {
    slot.job = job
    clearTimeout(slot.timers.idle)
    try {
      await slot.ready
    } catch {
      return // onExit already failed the job
    }
    if (slot.job !== job) return
    slot.timers.deadline = setTimeout(
      () => kill(slot, new BudgetError('time', `job ran past its ${opts.timeoutMs} ms budget`)),
      opts.timeoutMs,
    )
    slot.timers.memory = setInterval(() => {
      const rss = residentBytes(slot.process.pid)
      if (rss !== null && rss > opts.memoryBytes)
        kill(slot, new BudgetError('memory', `job passed its ${opts.memoryBytes} byte memory budget`))
    }, opts.memoryPollMs ?? 25)
    const request: WorkerRequest = { id: job.id, op: job.op, args: job.args }
    opts.onStart?.({ op: job.op, owner: job.owner })
    slot.process.send(request)
  }

  function dispatch() {
    while (queue.size > 0) {
      let slot = [...slots].find((s) => s.job === null && s.killedFor === null)
      if (!slot) {
        if (slots.size >= opts.size || closed) return
        slot = spawn()
      }
      void start(slot, queue.take()!)
    }
  }

  return {
    /**
     * Runs `op(...args)` in a worker process; rejects with BudgetError, PoolBusyError (the queue is full, or the pool
     * closed), WorkerExitedError or the job's own error. `early` is given what the job sends before its result.
     * `owner` says whose work it is: waiting jobs start in turns between owners (see createFairQueue).
     */
    run<T>(op: string, args: unknown[], early?: (value: unknown) => void, owner = ''): Promise<T> {
      if (closed) return Promise.reject(new PoolBusyError('worker pool is closed'))
      if (queue.size >= opts.maxQueue) return Promise.reject(new PoolBusyError(`${queue.size} jobs are waiting`))
      return new Promise<T>((resolve, reject) => {
        const job = {
          id: nextId++,
          op,
          args,
          owner,
          tag: 0,
          resolve: resolve as (value: unknown) => void,
          reject,
          early,
        }
        queue.add(job)
        dispatch()
      })
    },
    /** Jobs waiting for a process now. */
    get queued() {
      return queue.size
    },
    /** Processes running now (for tests and the memory bench). */
    get processes() {
      return [...slots].map((s) => s.process.pid)
    },
    async close() {
      closed = true
      for (const job of queue.drain()) job.reject(new PoolBusyError('worker pool is closed'))
      const exits = [...slots].map((s) => s.process.exited)
      for (const slot of slots) kill(slot, new Error('worker pool is closed'))
      await Promise.all(exits)
    },
  }
}

/**
 * The waiting jobs, taken in turns between their owners (start-time fair queuing with one unit per job): a job's tag is
 * the later of the tag of the job that started last and the tag after its owner's previous job, and the lowest tag
 * starts first (the earliest added among equals). So an owner with many jobs waiting gets one start per turn, and a
 * newcomer's job starts at the next turn, ahead of the rest of the others' backlog; an owner gains no credit by idling.
 * The owners' last tags are forgotten once nothing of theirs is ahead of the turn. Linear in the queue, which the
 * pool bounds (maxQueue).
 */
export function createFairQueue<J extends { owner: string; tag: number }>() {
  const waiting: J[] = []
  /** The tag after each owner's latest job, while it is ahead of `turn`. */
  const next = new Map<string, number>()
  /** The tag of the job that started last. */
  let turn = 0
  return {
    get size() {
      return waiting.length
    },
    add(job: J) {
      job.tag = Math.max(turn, next.get(job.owner) ?? 0)
      next.set(job.owner, job.tag + 1)
      waiting.push(job)
    },
    take(): J | undefined {
      let best = -1
      for (let i = 0; i < waiting.length; i++) if (best < 0 || waiting[i]!.tag < waiting[best]!.tag) best = i
      if (best < 0) return undefined
      const [job] = waiting.splice(best, 1)
      turn = job!.tag
      for (const [owner, tag] of next) if (tag <= turn) next.delete(owner)
      return job
    },
    drain: () => waiting.splice(0),
  }
}

/** An error from a worker process as an Error again, keeping its name and errno code for the callers' mapping. */
function revive(error: SerializedError): Error {
  return Object.assign(new Error(error.message), { name: error.name, code: error.code })
}

/**
 * The worker side: answers each request with `handlers[op](...args, early)`, one at a time, until the parent goes
 * away; `early(value)` sends part of the result ahead of it.
 */
// The arguments arrive over IPC untyped; each handler states its own.
// biome-ignore lint/suspicious/noExplicitAny: handler parameters are whatever each job declares
export function serveJobs(handlers: Record<string, (...args: any[]) => Promise<unknown>>) {
  const send = (answer: WorkerAnswer | { ready: true }) => process.send!(answer)
  process.on('message', async (request: WorkerRequest) => {
    try {
      const handler = handlers[request.op]
      if (!handler) throw new Error(`unknown job ${request.op}`)
      const early = (value: unknown) => send({ id: request.id, early: value })
      send({ id: request.id, ok: true, value: await handler(...request.args, early) })
    } catch (error) {
      const e = error as Error & { code?: string }
      send({
        id: request.id,
        ok: false,
        error: { name: e.name ?? 'Error', message: e.message ?? String(error), code: e.code },
      })
    }
  })
  // An orphan (the server was killed) must not linger: the IPC channel closing ends it.
  process.on('disconnect', () => process.exit(0))
  send({ ready: true })
}
