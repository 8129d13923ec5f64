import { describe, expect, test } from 'bun:test'
import { DEFAULT_NSFW_THRESHOLDS, isMature, type NsfwScores } from '../../src/moderation'

const scores = (s: Partial<NsfwScores>): NsfwScores => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 0, Drawing: 0, ...s })

describe('isMature', () => {
  test('defaults are 0.5 explicit / 0.8 suggestive', () => {
    expect(DEFAULT_NSFW_THRESHOLDS).toEqual({ pornHentai: 0.5, sexy: 0.8 })
  })

  test('thresholds of 0 flag everything, even an all-zero score', () => {
    const zero = { pornHentai: 0, sexy: 0 }
    expect(isMature(scores({ Neutral: 1 }), zero)).toBe(true)
    expect(isMature(scores({}), zero)).toBe(true)
  })

  test('Porn and Hentai are summed and the threshold is inclusive', () => {
    const t = DEFAULT_NSFW_THRESHOLDS
    expect(isMature(scores({ Porn: 0.25, Hentai: 0.25, Neutral: 0.5 }), t)).toBe(true)
    expect(isMature(scores({ Porn: 0.5, Neutral: 0.5 }), t)).toBe(true)
    expect(isMature(scores({ Hentai: 0.5, Drawing: 0.5 }), t)).toBe(true)
    expect(isMature(scores({ Porn: 0.25, Hentai: 0.2499, Neutral: 0.5001 }), t)).toBe(false)
    expect(isMature(scores({ Porn: 0.49, Neutral: 0.51 }), t)).toBe(false)
  })

  test('Sexy is judged alone against its own threshold, inclusive', () => {
    const t = DEFAULT_NSFW_THRESHOLDS
    expect(isMature(scores({ Sexy: 0.8, Neutral: 0.2 }), t)).toBe(true)
    expect(isMature(scores({ Sexy: 0.7999, Neutral: 0.2001 }), t)).toBe(false)
    // Sexy does not count towards the explicit sum.
    expect(isMature(scores({ Sexy: 0.3, Porn: 0.3, Neutral: 0.4 }), t)).toBe(false)
  })

  test('Neutral and Drawing never make an image mature', () => {
    expect(isMature(scores({ Neutral: 1 }), DEFAULT_NSFW_THRESHOLDS)).toBe(false)
    expect(isMature(scores({ Drawing: 1 }), DEFAULT_NSFW_THRESHOLDS)).toBe(false)
  })
})
