/** Messages exchanged between the classifier (main thread) and its model worker. */
import type { BackendChoice, BackendName } from './backend'

export { IMAGE_BYTES, IMAGE_SIDE } from '../media/classifier-input'

export interface NsfwScores {
  Porn: number
  Hentai: number
  Sexy: number
  Neutral: number
  Drawing: number
}

/** To the worker: first `init` (which backend it may use; the model loads on it), then jobs. */
export type WorkerRequest = { type: 'init'; backend: BackendChoice } | { type: 'job'; id: number; rgb: Uint8Array }

export type WorkerMessage =
  | { type: 'ready'; backend: BackendName; loadMs: number }
  | { type: 'fatal'; message: string }
  | { type: 'result'; id: number; scores: NsfwScores }
  | { type: 'error'; id: number; message: string }
