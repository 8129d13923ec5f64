export type { BackendChoice, BackendName } from './backend'
export {
  type Classifier,
  type ClassifierOptions,
  createNsfwClassifier,
  type ModelEvent,
  type NsfwClassifier,
} from './classifier'
export type { NsfwScores } from './protocol'

import type { NsfwScores } from './protocol'

export interface NsfwThresholds {
  pornHentai: number
  sexy: number
}

export const DEFAULT_NSFW_THRESHOLDS: NsfwThresholds = { pornHentai: 0.5, sexy: 0.8 }

/** Mature when explicit content (Porn + Hentai) or suggestive content (Sexy) reaches its threshold. */
export function isMature(s: NsfwScores, t: NsfwThresholds = DEFAULT_NSFW_THRESHOLDS): boolean {
  return s.Porn + s.Hentai >= t.pornHentai || s.Sexy >= t.sexy
}
