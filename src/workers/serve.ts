/**
 * The worker side of a pool (pool.ts), the same in a worker process and in a Worker thread: `start(setup)` runs on the
 * pool's first message and returns the job handlers (and what to report with ready); then each request is answered
 * with `jobs[op](...args, early)`, one at a time. `early(value)` sends part of the result ahead of it.
 */
import { type PoolMessage, serializeError, type WorkerMessage } from './protocol'

// The arguments arrive untyped; each handler states its own.
// biome-ignore lint/suspicious/noExplicitAny: handler parameters are whatever each job declares
export type JobHandlers = Record<string, (...args: any[]) => Promise<unknown>>

export interface Served {
  jobs: JobHandlers
  /** Handed to the pool's `onReady` (what a slow start took, what it chose). */
  info?: unknown
}

declare const self: Worker

/** How this worker talks to its pool: postMessage in a thread, IPC in a process. */
function poolPort() {
  if (!Bun.isMainThread) {
    return {
      send: (message: WorkerMessage) => self.postMessage(message),
      listen: (on: (message: PoolMessage) => void) =>
        self.addEventListener('message', (event) => on((event as MessageEvent<PoolMessage>).data)),
    }
  }
  // An orphan (the server was killed) must not linger: the IPC channel closing ends it. A thread ends with its process.
  process.on('disconnect', () => process.exit(0))
  return {
    send: (message: WorkerMessage) => process.send!(message),
    listen: (on: (message: PoolMessage) => void) => process.on('message', on),
  }
}

export function serveJobs<S>(start: (setup: S) => Served | Promise<Served>) {
  const port = poolPort()
  let jobs: JobHandlers = {}
  port.listen(async (message) => {
    if ('setup' in message) {
      try {
        const served = await start(message.setup as S)
        jobs = served.jobs
        port.send({ ready: true, info: served.info })
      } catch (error) {
        port.send({ failed: serializeError(error) })
      }
      return
    }
    const { id, op, args } = message
    try {
      const handler = jobs[op]
      if (!handler) throw new Error(`unknown job ${op}`)
      const early = (value: unknown) => port.send({ id, early: value })
      port.send({ id, ok: true, value: await handler(...args, early) })
    } catch (error) {
      port.send({ id, ok: false, error: serializeError(error) })
    }
  })
}
