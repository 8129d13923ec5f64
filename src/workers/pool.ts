import { createFairQueue } from './fair-queue'
import type { StartWorker, WorkerHandle } from './handles'
import { reviveError, type WorkerMessage } from './protocol'

/** A job ran past the pool's time or memory budget; its worker was stopped. */
export class BudgetError extends Error {
  override name = 'BudgetError'
  constructor(
    readonly budget: 'time' | 'memory',
    message: string,
  ) {
    super(message)
  }
}

/** Every worker is busy and the queue is full, or the pool is closed: try again shortly. */
export class PoolBusyError extends Error {
  override name = 'PoolBusyError'
}

/** A job's worker died (crashed, failed to start, or was ended from outside) before answering. */
export class WorkerExitedError extends Error {
  override name = 'WorkerExitedError'
}

export interface WorkerPoolOptions {
  /** Starts one worker: processWorkers or threadWorkers (handles.ts). */
  start: StartWorker
  /** Handed to each worker's start (serveJobs) as its first message. */
  setup?: unknown
  /** Workers at most (each runs one job at a time). */
  size: number
  /** Wall time one job may run in its worker, counted from its dispatch (queue wait is not counted). */
  timeoutMs: number
  /** Resident memory one worker may reach while it runs a job (read where the handle can: processes). */
  memoryBytes?: number
  /** A worker idle this long is ended; the next job starts a new one. 0 or unset: kept. */
  idleMs?: number
  /** Jobs waiting at most; beyond it `run` rejects with PoolBusyError. */
  maxQueue: number
  /** How often a running job's worker memory is read. */
  memoryPollMs?: number
  /** Told of every job as it starts in a worker, in start order (metrics, and the tests of the queue's fairness). */
  onStart?(job: { op: string; owner: string }): void
  /** Told each time a worker has started, with what its start reported. */
  onReady?(info: unknown): void
  /** Told each time a worker is ended for being idle. */
  onIdleExit?(): void
}

export interface RunOptions {
  /** Given what the job sends before its result. */
  early?(value: unknown): void
  /** Whose work it is (an account, a client address): waiting jobs start in turns between owners (fair-queue.ts). */
  owner?: string
  /**
   * The caller stops waiting when it aborts: a waiting job leaves the queue, a running one is left to finish (its
   * answer dropped) and holds its worker until then or until its time budget.
   */
  signal?: AbortSignal
  /** Buffers of `args` to move to the worker rather than copy (threads). */
  transfer?: Transferable[]
}

interface Job {
  id: number
  op: string
  args: unknown[]
  owner: string
  /** Its place in the fair queue. */
  tag: number
  transfer?: Transferable[]
  /** Sent to its worker: from here its budgets run and it cannot be taken back. */
  sent: boolean
  settled: boolean
  /** Settles the caller's promise, once: a later outcome (the answer of a job its caller gave up on) is dropped. */
  settle(outcome: { value: unknown } | { error: Error }): void
  early?(value: unknown): void
}

interface Slot {
  worker: WorkerHandle
  /** Settled when the worker reports ready, or fails to start; what warm() waits for. */
  ready: Promise<void>
  isReady: boolean
  markReady(): void
  failReady(error: Error): void
  job: Job | null
  timers: { deadline?: Timer; memory?: Timer; idle?: Timer }
  /** Why the pool is ending this worker, if it is: its job fails with this, and it takes no other. */
  stopping: Error | null
}

const closedError = () => new PoolBusyError('worker pool is closed')

/** A pool's state, which the functions below share. */
interface Pool {
  opts: WorkerPoolOptions
  slots: Set<Slot>
  queue: ReturnType<typeof createFairQueue<Job>>
  nextId: number
  closed: boolean
}

function spawn(pool: Pool): Slot {
  let markReady!: () => void
  let failReady!: (error: Error) => void
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve
    failReady = reject
  })
  // A failed start also reaches the jobs; this keeps an unobserved warm-up from being an unhandled rejection.
  ready.catch(() => {})
  const slot: Slot = {
    ready,
    isReady: false,
    markReady,
    failReady,
    job: null,
    timers: {},
    stopping: null,
    worker: pool.opts.start({
      message: (message) => onMessage(pool, slot, message),
      exit: (detail) => onExit(pool, slot, detail),
    }),
  }
  slot.worker.send({ setup: pool.opts.setup })
  pool.slots.add(slot)
  return slot
}

function onMessage(pool: Pool, slot: Slot, message: WorkerMessage) {
  // Once the pool ends a worker, its job fails with the reason, whatever the worker still says.
  if (slot.stopping) return
  if ('ready' in message) {
    slot.isReady = true
    slot.markReady()
    pool.opts.onReady?.(message.info)
    if (slot.job) send(pool, slot)
    else dispatch(pool)
    return
  }
  if ('failed' in message) {
    return stop(slot, new WorkerExitedError(`worker failed to start: ${message.failed.message}`), true)
  }
  const job = slot.job
  if (!job || job.id !== message.id) return
  if ('early' in message) {
    if (!job.settled) job.early?.(message.early)
    return
  }
  clearTimers(slot)
  slot.job = null
  job.settle(message.ok ? { value: message.value } : { error: reviveError(message.error) })
  dispatch(pool)
}

function onExit(pool: Pool, slot: Slot, detail: string) {
  pool.slots.delete(slot)
  clearTimers(slot)
  const error = slot.stopping ?? new WorkerExitedError(`worker exited (${detail})`)
  slot.failReady(error)
  slot.job?.settle({ error })
  slot.job = null
  dispatch(pool)
}

function clearTimers(slot: Slot) {
  clearTimeout(slot.timers.deadline)
  clearInterval(slot.timers.memory)
  clearTimeout(slot.timers.idle)
  slot.timers = {}
}

function stop(slot: Slot, reason: Error, force: boolean) {
  slot.stopping ??= reason
  slot.worker.stop(force)
}

/** Starts the slot's job in its ready worker, under the budgets. */
function send({ opts }: Pool, slot: Slot) {
  const job = slot.job!
  job.sent = true
  slot.timers.deadline = setTimeout(
    () => stop(slot, new BudgetError('time', `job ran past its ${opts.timeoutMs} ms budget`), true),
    opts.timeoutMs,
  )
  const { memoryBytes } = opts
  if (memoryBytes) {
    slot.timers.memory = setInterval(() => {
      const rss = slot.worker.memory()
      if (rss !== null && rss > memoryBytes)
        stop(slot, new BudgetError('memory', `job passed its ${memoryBytes} byte memory budget`), true)
    }, opts.memoryPollMs ?? 25)
  }
  opts.onStart?.({ op: job.op, owner: job.owner })
  slot.worker.send({ id: job.id, op: job.op, args: job.args }, job.transfer)
}

/** Gives waiting jobs to free workers (starting more up to `size`); a free worker with nothing to do idles out. */
function dispatch(pool: Pool) {
  while (pool.queue.size > 0) {
    let slot = [...pool.slots].find((s) => s.job === null && s.stopping === null)
    if (!slot) {
      if (pool.slots.size >= pool.opts.size || pool.closed) break
      slot = spawn(pool)
    }
    slot.job = pool.queue.take()!
    clearTimeout(slot.timers.idle)
    slot.timers.idle = undefined
    if (slot.isReady) send(pool, slot)
  }
  for (const slot of pool.slots) if (slot.job === null && slot.isReady) idle(pool.opts, slot)
}

function idle(opts: WorkerPoolOptions, slot: Slot) {
  if (!opts.idleMs || slot.timers.idle) return
  slot.timers.idle = setTimeout(() => {
    if (slot.job !== null || slot.stopping) return
    stop(slot, new WorkerExitedError('worker ended when idle'), false)
    opts.onIdleExit?.()
  }, opts.idleMs)
  // An idle countdown is no reason to keep the process alive.
  slot.timers.idle.unref?.()
}

/** The caller gave up on `job`: out of the queue, or off a worker still starting; a job sent runs on. */
function abandon(pool: Pool, job: Job, reason: Error) {
  if (job.settled) return
  const slot = pool.queue.remove(job) ? undefined : [...pool.slots].find((s) => s.job === job)
  if (slot && !job.sent) slot.job = null
  job.settle({ error: reason })
  dispatch(pool)
}

/** Queues `op(...args)` and settles the promise with its outcome. */
function enqueue<T>(pool: Pool, op: string, args: unknown[], run: RunOptions): Promise<T> {
  const { signal } = run
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => abandon(pool, job, signal!.reason)
    const job: Job = {
      id: pool.nextId++,
      op,
      args,
      owner: run.owner ?? '',
      tag: 0,
      transfer: run.transfer,
      sent: false,
      settled: false,
      early: run.early,
      settle(outcome) {
        if (job.settled) return
        job.settled = true
        signal?.removeEventListener('abort', onAbort)
        if ('error' in outcome) reject(outcome.error)
        else resolve(outcome.value as T)
      },
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    pool.queue.add(job)
    dispatch(pool)
  })
}

/**
 * A bounded pool of workers (processes or threads, handles.ts) for work that must not run on the event loop. Each
 * worker runs one job at a time, so ending it past a budget fails only that job; a worker that crashes, breaches a
 * budget or fails to start is replaced by the next job. Workers start on demand (or by warm()) and end when idle.
 */
export function createWorkerPool(opts: WorkerPoolOptions) {
  const pool: Pool = { opts, slots: new Set(), queue: createFairQueue<Job>(), nextId: 1, closed: false }
  const { slots, queue } = pool
  return {
    /**
     * Runs `op(...args)` in a worker; rejects with BudgetError, PoolBusyError (the queue is full, or the pool closed),
     * WorkerExitedError, the job's own error, or the signal's reason.
     */
    run<T>(op: string, args: unknown[], run: RunOptions = {}): Promise<T> {
      if (pool.closed) return Promise.reject(closedError())
      if (queue.size >= opts.maxQueue) return Promise.reject(new PoolBusyError(`queue full (${queue.size} waiting)`))
      return enqueue<T>(pool, op, args, run)
    },
    /** Starts a worker unless one runs; resolves when one is ready. */
    warm(): Promise<void> {
      if (pool.closed) return Promise.reject(closedError())
      return ([...slots].find((s) => s.stopping === null) ?? spawn(pool)).ready
    },
    /** Jobs waiting for a worker now. */
    get queued() {
      return queue.size
    },
    /** Jobs whose callers are waiting: queued or running. */
    get pending() {
      return queue.size + [...slots].filter((s) => s.job && !s.job.settled).length
    },
    /** Workers not being ended: starting, and ready. */
    get workers() {
      const live = [...slots].filter((s) => s.stopping === null)
      return { starting: live.filter((s) => !s.isReady).length, ready: live.filter((s) => s.isReady).length }
    },
    /** Process ids of the workers that are processes (for tests and the memory bench). */
    get processes() {
      return [...slots].flatMap((s) => (s.worker.pid === null ? [] : [s.worker.pid]))
    },
    /** Fails every job at once, ends every worker and refuses later jobs. */
    async close() {
      pool.closed = true
      const error = closedError()
      for (const job of queue.drain()) job.settle({ error })
      const exits = [...slots].map((s) => s.worker.exited)
      for (const slot of slots) {
        slot.job?.settle({ error })
        stop(slot, error, true)
      }
      await Promise.all(exits)
    },
  }
}

export type WorkerPool = ReturnType<typeof createWorkerPool>
