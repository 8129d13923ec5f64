import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createNsfwClassifier } from '../../src/moderation'

const MAX_QUEUE = 2
// 1 ms is shorter than any inference, so every job on this classifier times out.
const classifier = createNsfwClassifier({ timeoutMs: 1, maxQueue: MAX_QUEUE })
const image = () => new Uint8Array(224 * 224 * 3).fill(127)

beforeAll(() => classifier.warm(), 60_000)

afterAll(() => classifier.close())

describe('nsfw classifier limits', () => {
  test('a job slower than timeoutMs rejects, and the late result is ignored', async () => {
    await expect(classifier.classify(image())).rejects.toThrow(/timed out/)
    expect(classifier.queueDepth).toBe(0)
    // The worker finishes the abandoned job and keeps serving (it times out again, not crashes).
    await Bun.sleep(500)
    await expect(classifier.classify(image())).rejects.toThrow(/timed out/)
  }, 60_000)

  test('more than maxQueue waiting jobs rejects immediately', async () => {
    // A classifier of its own, warm and idle for certain: the shared one's worker may still be finishing the jobs the
    // previous test abandoned (how long it takes is the machine's business, so no sleep can be sure to outlast it).
    const idle = createNsfwClassifier({ timeoutMs: 1, maxQueue: MAX_QUEUE })
    try {
      await idle.warm()
      const jobs = Array.from({ length: MAX_QUEUE + 2 }, () => idle.classify(image()))
      // One job runs, MAX_QUEUE wait, the last is over the limit.
      expect(idle.queueDepth).toBe(MAX_QUEUE + 1)
      const results = await Promise.allSettled(jobs)
      const reasons = results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'fulfilled'))
      expect(reasons.at(-1)).toMatch(/queue full/)
      expect(reasons.slice(0, -1).every((r) => /timed out/.test(r))).toBe(true)
    } finally {
      await idle.close()
    }
  }, 60_000)

  test('close() rejects pending work and later calls', async () => {
    const job = classifier.classify(image())
    await classifier.close()
    await expect(job).rejects.toThrow(/closed/)
    expect(classifier.queueDepth).toBe(0)
    await expect(classifier.classify(image())).rejects.toThrow(/closed/)
    await expect(classifier.warm()).rejects.toThrow(/closed/)
  }, 60_000)
})
