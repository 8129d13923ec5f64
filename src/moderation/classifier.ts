import { log } from '../log'
import type { BackendChoice, BackendName } from './backend'
import { IMAGE_BYTES, type NsfwScores, type WorkerMessage, type WorkerRequest } from './protocol'

export interface Classifier {
  /** input: 224x224 RGB bytes (length 150528, row-major). Rejects on timeout or model failure. */
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
}

/** The real classifier: a Classifier that also tells which tfjs backend runs the model. */
export interface NsfwClassifier extends Classifier {
  /** Reported by the worker once the model is loaded; null before that. */
  readonly backend: BackendName | null
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

/**
 * Runs nsfwjs in a single Bun Worker so inference never blocks the event loop.
 * One worker on purpose: the wasm backend is single-threaded under Bun, so a worker uses
 * one core, and on the 2-core host sharp needs the other one for decoding/resizing.
 */
export function createNsfwClassifier(opts: ClassifierOptions): NsfwClassifier {
  const pending = new Map<number, Job>() // unsettled jobs, waiting or running
  const waiting: Job[] = []
  let current: ModelWorker | null = null
  let nextId = 1
  let closed = false
  let backend: BackendName | null = null

  function settle(id: number, outcome: { scores: NsfwScores } | { error: Error }): void {
    const job = pending.get(id)
    if (!job) return // already timed out or rejected; late worker results land here
    pending.delete(id)
    clearTimeout(job.deadline)
    const queued = waiting.indexOf(job)
    if (queued !== -1) waiting.splice(queued, 1)
    if ('scores' in outcome) job.resolve(outcome.scores)
    else job.reject(outcome.error)
  }

  function rejectAll(error: Error): void {
    for (const id of [...pending.keys()]) settle(id, { error })
  }

  /** Drops the worker and fails everything in flight; the next classify() starts a fresh one. */
  function discard(mw: ModelWorker, error: Error): void {
    if (current !== mw) return
    current = null
    clearTimeout(mw.watchdog)
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
    mw.worker.postMessage(request, { transfer: [job.rgb.buffer] })
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
          // Logged on the first load only: a replacement worker (after a wedge) loads the same backend.
          if (backend === null) {
            log.info('nsfw model ready', { backend: msg.backend, loadMs: msg.loadMs })
          }
          backend = msg.backend
          mw.isReady = true
          markReady()
          dispatch()
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
      ensureWorker()
      return new Promise<NsfwScores>((resolve, reject) => {
        const id = nextId++
        const job: Job = {
          id,
          // Own copy: its buffer is transferred to the worker and the caller may reuse theirs.
          rgb: new Uint8Array(rgb),
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
  }
}
