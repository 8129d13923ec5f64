import { beforeAll, describe, expect, test } from 'bun:test'
import { DEFAULT_NSFW_THRESHOLDS, isMature, type NsfwScores } from '../../src/moderation'
import { initBackend } from '../../src/moderation/backend'
import { sharedClassifier } from '../shared-classifier'
import { CLEAR_TOP, drawingImage, landscapeImage, topClass } from './images'

// The run's one real model (created with NSFW_BACKEND=wasm); not closed here, later files use it too.
const classifier = sharedClassifier()

// The classifier logs each load and its time ("nsfw model loaded").
beforeAll(() => classifier.warm(), 60_000)

function expectDistribution(s: NsfwScores): void {
  const values = [s.Porn, s.Hentai, s.Sexy, s.Neutral, s.Drawing]
  for (const v of values) expect(v).toBeWithin(0, 1.000001)
  expect(values.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 3)
}

describe('nsfw classifier (real MobileNetV2)', () => {
  test('the worker reports the backend it runs: wasm, as NSFW_BACKEND=wasm asks', () => {
    expect(classifier.backend).toBe('wasm')
  })

  test('warm() is idempotent once loaded', async () => {
    await classifier.warm()
    await classifier.warm()
  })

  test('a flat cartoon drawing is Drawing, clearly, and not mature', async () => {
    const s = await classifier.classify(await drawingImage())
    expectDistribution(s)
    expect(topClass(s)).toBe('Drawing')
    expect(s.Drawing).toBeGreaterThanOrEqual(CLEAR_TOP)
    expect(isMature(s, DEFAULT_NSFW_THRESHOLDS)).toBe(false)
  }, 60_000)

  test('a photo-like landscape is Neutral, clearly, and not mature', async () => {
    const s = await classifier.classify(await landscapeImage())
    expectDistribution(s)
    expect(topClass(s)).toBe('Neutral')
    expect(s.Neutral).toBeGreaterThanOrEqual(CLEAR_TOP)
    expect(isMature(s, DEFAULT_NSFW_THRESHOLDS)).toBe(false)
  }, 60_000)

  test('same input gives the same scores', async () => {
    const rgb = await landscapeImage()
    const [a, b] = await Promise.all([classifier.classify(rgb.slice()), classifier.classify(rgb.slice())])
    expect(a).toEqual(b)
    expect(classifier.queueDepth).toBe(0)
  }, 60_000)

  test("the input's buffer is moved to the Worker, not copied; a view of part of a buffer is copied", async () => {
    const rgb = await landscapeImage()
    const whole = rgb.slice()
    const scores = await classifier.classify(whole)
    // Transferred: the caller's view was emptied (a copy would have left it as it was).
    expect(whole.byteLength).toBe(0)
    // A view into a larger buffer cannot be moved without the rest: it is copied and left as it was.
    const larger = new Uint8Array(rgb.length + 16)
    larger.set(rgb, 16)
    const part = larger.subarray(16)
    expect(await classifier.classify(part)).toEqual(scores)
    expect(part).toEqual(rgb.slice())
  }, 60_000)

  test('wrong input size rejects without touching the worker', async () => {
    await expect(classifier.classify(new Uint8Array(100))).rejects.toThrow(/150528/)
  })
})

describe("backend choice (initBackend, the worker's first step)", () => {
  // Whether tfjs-node can load here decides what "auto" must pick; it is optional and absent on our CI machines.
  const tfjsNode = '@tensorflow/tfjs-node'
  let nativeAvailable = false
  beforeAll(async () => {
    nativeAvailable = await import(tfjsNode).then(
      () => true,
      () => false,
    )
  })

  test('auto picks tfjs-node when it is importable, else wasm', async () => {
    expect(await initBackend('auto')).toBe(nativeAvailable ? 'tensorflow' : 'wasm')
  })

  // Only tells the two apart where tfjs-node is installed; here both give wasm.
  test('wasm is used when forced, even where tfjs-node is available', async () => {
    expect(await initBackend('wasm')).toBe('wasm')
  })
})
