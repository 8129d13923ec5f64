import { log } from '../log'
import { threadWorkers } from '../workers/handles'
import { createWorkerPool } from '../workers/pool'
import type { BackendChoice, BackendName } from './backend'
import { IMAGE_BYTES, type ModelLoaded, type NsfwScores } from './protocol'

export interface Classifier {
  /**
   * input: 224x224 RGB bytes (length 150528, row-major), taken over by the call: a view of a whole ArrayBuffer is
   * transferred to the model's Worker without a copy (the caller's view is emptied when its job starts). Loads the
   * model first when it is not loaded. Rejects on timeout or model failure.
   */
  classify(rgb: Uint8Array): Promise<NsfwScores>
  /** Starts loading + warming the model in the background; resolves when ready. Safe to call repeatedly. */
  warm(): Promise<void>
  /** Stops accepting work, rejects waiting and running jobs, terminates the worker. */
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

// One MobileNetV2 inference takes well under a second; a worker silent this long after being handed a job is wedged, so
// the pool replaces it rather than stalling every later job.
const WEDGED_AFTER_MS = 60_000

/** The input as a view of a whole ArrayBuffer, to transfer: the caller's own when it is one (no copy). */
function transferable(rgb: Uint8Array): Uint8Array<ArrayBuffer> {
  const { buffer } = rgb
  if (buffer instanceof ArrayBuffer && rgb.byteOffset === 0 && rgb.byteLength === buffer.byteLength) {
    return rgb as Uint8Array<ArrayBuffer>
  }
  return new Uint8Array(rgb)
}

/**
 * Runs nsfwjs in a pool of one Worker thread (src/workers/pool.ts) so inference never blocks the event loop. One on
 * purpose: the wasm backend is single-threaded under Bun, so a worker uses one core, and on the 2-core host sharp
 * needs the other one for decoding/resizing.
 *
 * The model loads with the first scan (or `warm()`), not before: a scan meanwhile waits for it, within its deadline.
 * With `idleUnloadMs` the Worker is terminated after that long without a scan, so an idle server holds none of it.
 */
export function createNsfwClassifier(opts: ClassifierOptions): NsfwClassifier {
  let backend: BackendName | null = null
  const pool = createWorkerPool({
    start: threadWorkers(new URL('./worker.ts', import.meta.url)),
    setup: opts.backend ?? 'auto',
    size: 1,
    timeoutMs: WEDGED_AFTER_MS,
    maxQueue: opts.maxQueue,
    // Terminating the Worker is what returns the model's memory (its wasm heap never shrinks).
    idleMs: opts.idleUnloadMs,
    onReady(info) {
      const loaded = info as ModelLoaded
      // Each load is logged: the first scan after an idle unload waits for it.
      log.info('nsfw model loaded', { backend: loaded.backend, loadMs: loaded.loadMs })
      backend = loaded.backend
      opts.onModel?.({ type: 'loaded', loadMs: loaded.loadMs })
    },
    onIdleExit() {
      log.info('nsfw model unloaded', { idleSeconds: opts.idleUnloadMs! / 1000 })
      opts.onModel?.({ type: 'unloaded' })
    },
  })

  return {
    async classify(rgb: Uint8Array): Promise<NsfwScores> {
      if (rgb.length !== IMAGE_BYTES) throw new Error(`expected ${IMAGE_BYTES} RGB bytes, got ${rgb.length}`)
      const input = transferable(rgb)
      // Counted from the call, so the wait for the model and the queue is included.
      const signal = AbortSignal.timeout(opts.timeoutMs)
      try {
        // Moved, not copied: the input's buffer belongs to the Worker once its job starts.
        return await pool.run<NsfwScores>('classify', [input], { signal, transfer: [input.buffer] })
      } catch (error) {
        if (error === signal.reason) throw new Error(`nsfw classify timed out after ${opts.timeoutMs} ms`)
        throw error
      }
    },
    warm: () => pool.warm(),
    // Done once the scans are failed and the Worker is told to end, not when its thread is gone: a caller that awaits
    // close() before its own pending scans finds them rejected, not reported unhandled meanwhile.
    async close() {
      void pool.close()
    },
    get queueDepth() {
      return pool.pending
    },
    get backend() {
      return backend
    },
    get state() {
      const { starting, ready } = pool.workers
      return ready > 0 ? 'loaded' : starting > 0 ? 'loading' : 'unloaded'
    },
  }
}
