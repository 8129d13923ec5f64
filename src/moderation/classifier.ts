import { log } from '../log'
import type { BackendChoice, BackendName } from './backend'
import { IMAGE_BYTES, type NsfwScores, type WorkerMessage, type WorkerRequest } from './protocol'

export interface Classifier {
  /**
   * input: 224x224 RGB bytes (length 150528, row-major), taken over by the call: a view of a whole ArrayBuffer is
   * transferred to the model's Worker without a copy (the caller's view is emptied when its job starts). Loads the
   * model first when it is not loaded. Rejects on timeout or model failure.
   */
  classify(rgb: Uint8Array): Promise<NsfwScores>
  /** Starts loading + warming the model in the background; resolves when ready. Safe to call repeatedly. */
  warm(): Promise<void>
  /** Stops accepting work, rejects queued jobs, terminates the worker. */
  close(): Promise<void>
  /** number of jobs waiting or running (for metrics) */
  readonly queueDepth: number
}

export interface ClassifierOptions {
  /** Deadline per classify() call, counted from the call, so queue wait is included. */
  timeoutMs: number
  /** classify() rejects at once when this many jobs are already waiting for the worker. */
  maxQueue: number
  /** NSFW_BACKEND: "auto" uses tfjs-node when it is importable, else wasm; "wasm" always uses wasm. */
  backend?: BackendChoice
  /**
   * NSFW_IDLE_UNLOAD_SECONDS, in ms: after this long without a scan the model's Worker is terminated, which gives its
   * memory back (a wasm heap never shrinks, so nothing less does); the next scan loads it again. 0: kept once loaded.
   */
  idleUnloadMs?: number
  /** Told each time the model is loaded and ready, and each time it is unloaded for being idle. */
  onModel?: (event: ModelEvent) => void
}

export type ModelEvent = { type: 'loaded'; loadMs: number } | { type: 'unloaded' }

/** The real classifier: a Classifier that also tells which tfjs backend runs the model. */
export interface NsfwClassifier extends Classifier {
  /** Reported by the worker once the model is loaded; null before that. */
  readonly backend: BackendName | null
  /** Whether the model's Worker is running: not yet (or unloaded), loading, or loaded. */
  readonly state: 'unloaded' | 'loading' | 'loaded'
}

// One MobileNetV2 inference takes well under a second; a worker silent this long after
// being handed a job is wedged, so it is replaced rather than stalling every later job.
const WEDGED_AFTER_MS = 60_000

interface Job {
  id: number
  rgb: Uint8Array<ArrayBuffer>
  resolve(scores: NsfwScores): void
  reject(err: Error): void
  deadline: ReturnType<typeof setTimeout>
}

interface ModelWorker {
  worker: Worker
  ready: Promise<void>
  isReady: boolean
  /** Job the worker is computing; kept after that job timed out because the worker is still busy. */
  busyWith: number | null
  watchdog: ReturnType<typeof setTimeout> | undefined
  /** Fails warm() callers still waiting; a no-op once the model is ready. */
  failReady(err: Error): void
}

/** The input as a view of a whole ArrayBuffer, to transfer: the caller's own when it is one (no copy). */
function transferable(rgb: Uint8Array): Uint8Array<ArrayBuffer> {
  const { buffer } = rgb
  if (buffer instanceof ArrayBuffer && rgb.byteOffset === 0 && rgb.byteLength === buffer.byteLength) {
    return rgb as Uint8Array<ArrayBuffer>
  }
  return new Uint8Array(rgb)
}

/**
 * Runs nsfwjs in a single Bun Worker so inference never blocks the event loop.
 * One worker on purpose: the wasm backend is single-threaded under Bun, so a worker uses
 * one core, and on the 2-core host sharp needs the other one for decoding/resizing.
 *
 * The model loads with the first scan (or `warm()`), not before: a scan meanwhile waits for it, within its deadline.
 * With `idleUnloadMs` the Worker is terminated after that long without a scan, so an idle server holds none of it.
 */
export function createNsfwClassifier(opts: ClassifierOptions): NsfwClassifier {
  const pending = new Map<number, Job>() // unsettled jobs, waiting or running
  const waiting: Job[] = []
  let current: ModelWorker | null = null
  let nextId = 1
  let closed = false
  let backend: BackendName | null = null
  let idleTimer: ReturnType<typeof setTimeout> | undefined

  function settle(id: number, outcome: { scores: NsfwScores } | { error: Error }): void {
    const job = pending.get(id)
    if (!job) return // already timed out or rejected; late worker results land here
    pending.delete(id)
    clearTimeout(job.deadline)
    const queued = waiting.indexOf(job)
    if (queued !== -1) waiting.splice(queued, 1)
    if ('scores' in outcome) job.resolve(outcome.scores)
    else job.reject(outcome.error)
    armIdle()
  }

  /** Starts the idle countdown once the model is loaded and has nothing to do; a scan stops it. */
  function armIdle(): void {
    const mw = current
    if (!opts.idleUnloadMs || !mw?.isReady || mw.busyWith !== null || pending.size > 0) return
    clearTimeout(idleTimer)
    idleTimer = setTimeout(() => unload(mw), opts.idleUnloadMs)
    // An idle countdown is no reason to keep a process alive.
    idleTimer.unref?.()
  }

  /** Terminating the Worker is what returns the model's memory (its wasm heap never shrinks). */
  function unload(mw: ModelWorker): void {
    if (current !== mw || mw.busyWith !== null || pending.size > 0) return
    current = null
    mw.worker.terminate()
    log.info('nsfw model unloaded', { idleSeconds: opts.idleUnloadMs! / 1000 })
    opts.onModel?.({ type: 'unloaded' })
  }

  function rejectAll(error: Error): void {
    for (const id of [...pending.keys()]) settle(id, { error })
  }

  /** Drops the worker and fails everything in flight; the next classify() starts a fresh one. */
  function discard(mw: ModelWorker, error: Error): void {
    if (current !== mw) return
    current = null
    clearTimeout(mw.watchdog)
    clearTimeout(idleTimer)
    mw.worker.terminate()
    mw.failReady(error)
    rejectAll(error)
  }

  function dispatch(): void {
    const mw = current
    if (!mw?.isReady || mw.busyWith !== null) return
    const job = waiting.shift()
    if (!job) return
    mw.busyWith = job.id
    const request: WorkerRequest = { type: 'job', id: job.id, rgb: job.rgb }
    try {
      // Moved, not copied: the job's buffer belongs to the Worker from here on.
      mw.worker.postMessage(request, { transfer: [job.rgb.buffer] })
    } catch {
      // Native memory cannot be moved (sharp's own buffer, when media runs in this process: the CLI, tests); the
      // server's inputs arrive from its media worker processes in buffers of their own, which can.
      mw.worker.postMessage(request)
    }
    mw.watchdog = setTimeout(
      () => discard(mw, new Error(`nsfw worker unresponsive for ${WEDGED_AFTER_MS} ms`)),
      WEDGED_AFTER_MS,
    )
  }

  function startWorker(): ModelWorker {
    const worker = new Worker(new URL('./worker.ts', import.meta.url))
    let markReady!: () => void
    let failReady!: (err: Error) => void
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve
      failReady = reject
    })
    // Load failures also reach callers through their jobs; this keeps an unobserved
    // warm-up promise from becoming an unhandled rejection.
    ready.catch(() => {})
    const mw: ModelWorker = { worker, ready, isReady: false, busyWith: null, watchdog: undefined, failReady }

    worker.onmessage = (event: MessageEvent<WorkerMessage>) => {
      const msg = event.data
      switch (msg.type) {
        case 'ready':
          // Each load is logged: the first scan after an idle unload waits for it.
          log.info('nsfw model loaded', { backend: msg.backend, loadMs: msg.loadMs })
          backend = msg.backend
          mw.isReady = true
          markReady()
          opts.onModel?.({ type: 'loaded', loadMs: msg.loadMs })
          dispatch()
          armIdle()
          return
        case 'fatal':
          discard(mw, new Error(`nsfw model failed to load: ${msg.message}`))
          return
        case 'result':
        case 'error':
          clearTimeout(mw.watchdog)
          mw.busyWith = null
          settle(msg.id, msg.type === 'result' ? { scores: msg.scores } : { error: new Error(msg.message) })
          dispatch()
          // A late result (its job timed out) settles nothing, so the countdown starts here too.
          armIdle()
      }
    }
    worker.onerror = (event: ErrorEvent) => discard(mw, new Error(`nsfw worker crashed: ${event.message}`))
    worker.addEventListener('close', () => discard(mw, new Error('nsfw worker exited')))
    const init: WorkerRequest = { type: 'init', backend: opts.backend ?? 'auto' }
    worker.postMessage(init)
    return mw
  }

  function ensureWorker(): ModelWorker {
    current ??= startWorker()
    return current
  }

  return {
    classify(rgb: Uint8Array): Promise<NsfwScores> {
      if (closed) return Promise.reject(new Error('classifier is closed'))
      if (rgb.length !== IMAGE_BYTES) {
        return Promise.reject(new Error(`expected ${IMAGE_BYTES} RGB bytes, got ${rgb.length}`))
      }
      if (waiting.length >= opts.maxQueue) {
        return Promise.reject(new Error(`nsfw queue full (${waiting.length} waiting)`))
      }
      clearTimeout(idleTimer)
      ensureWorker()
      return new Promise<NsfwScores>((resolve, reject) => {
        const id = nextId++
        const job: Job = {
          id,
          rgb: transferable(rgb),
          resolve,
          reject,
          deadline: setTimeout(
            () => settle(id, { error: new Error(`nsfw classify timed out after ${opts.timeoutMs} ms`) }),
            opts.timeoutMs,
          ),
        }
        pending.set(id, job)
        waiting.push(job)
        dispatch()
      })
    },

    warm(): Promise<void> {
      if (closed) return Promise.reject(new Error('classifier is closed'))
      return ensureWorker().ready
    },

    async close(): Promise<void> {
      closed = true
      const error = new Error('classifier is closed')
      if (current) discard(current, error)
      rejectAll(error)
    },

    get queueDepth(): number {
      return pending.size
    },

    get backend(): BackendName | null {
      return backend
    },

    get state() {
      if (!current) return 'unloaded'
      return current.isReady ? 'loaded' : 'loading'
    },
  }
}
