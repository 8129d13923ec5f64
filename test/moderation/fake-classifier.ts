import type { Classifier, NsfwScores } from '../../src/moderation'

/** What the fake answers: a verdict, given class scores, a failure, or nothing at all. */
export type FakeMode = 'neutral' | 'porn' | 'throw' | 'hang' | NsfwScores

const NEUTRAL: NsfwScores = { Porn: 0.01, Hentai: 0.01, Sexy: 0.01, Neutral: 0.95, Drawing: 0.02 }
const PORN: NsfwScores = { Porn: 0.9, Hentai: 0.05, Sexy: 0.03, Neutral: 0.01, Drawing: 0.01 }

/** A classifier whose behaviour a test switches at will; no model is loaded. */
export function fakeClassifier(initial: FakeMode = 'neutral') {
  const state: { mode: FakeMode; calls: number } = { mode: initial, calls: 0 }
  const classifier: Classifier = {
    async classify() {
      state.calls++
      const mode = state.mode
      if (typeof mode === 'object') return { ...mode }
      switch (mode) {
        case 'neutral':
          return NEUTRAL
        case 'porn':
          return PORN
        case 'throw':
          throw new Error('classifier is down (test)')
        case 'hang':
          return new Promise<NsfwScores>(() => {})
      }
    },
    warm: async () => {},
    close: async () => {},
    queueDepth: 0,
  }
  return { classifier, state }
}

/** Overrides for a server started directly (not through test/helpers.ts) whose test is not about scanning: no model. */
export const noModel = () => ({ classifier: fakeClassifier('neutral').classifier })
