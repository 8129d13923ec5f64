/** What the classifier (main thread) and its model worker exchange: the input's size, the scores, the load report. */
import type { BackendName } from './backend'

export { IMAGE_BYTES, IMAGE_SIDE } from '../media/classifier-input'

export interface NsfwScores {
  Porn: number
  Hentai: number
  Sexy: number
  Neutral: number
  Drawing: number
}

/** What the model's worker reports once loaded (its start's `info`, src/workers/serve.ts). */
export interface ModelLoaded {
  backend: BackendName
  loadMs: number
}
