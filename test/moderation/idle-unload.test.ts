import { afterAll, describe, expect, spyOn, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { createNsfwClassifier, type ModelEvent, type NsfwClassifier } from '../../src/moderation'
import { uploadForm } from '../fixtures'
import { startTestServer } from '../helpers'
import { CLEAR_TOP, drawingImage, landscapeImage, topClass } from './images'
import { drawingPng, landscapeJpeg } from './samples'

/** A real model (wasm) of its own, with every load and unload recorded, and a way to wait for the next one. */
function watched(idleUnloadMs: number) {
  const events: ModelEvent['type'][] = []
  const waiters: { type: ModelEvent['type']; resolve(): void }[] = []
  const classifier = createNsfwClassifier({
    timeoutMs: 60_000,
    maxQueue: 8,
    backend: 'wasm',
    idleUnloadMs,
    onModel(event) {
      events.push(event.type)
      for (const w of waiters.splice(0)) {
        if (w.type === event.type) w.resolve()
        else waiters.push(w)
      }
    },
  })
  const next = (type: ModelEvent['type']) => new Promise<void>((resolve) => waiters.push({ type, resolve }))
  return { classifier, events, next }
}

describe('the model loads with the first scan and is unloaded when idle', () => {
  const closing: NsfwClassifier[] = []
  afterAll(() => Promise.all(closing.map((c) => c.close())))

  test('nothing loads before a scan; a scan during the load waits for it, and one load serves both', async () => {
    const { classifier, events } = watched(0)
    closing.push(classifier)
    expect(classifier.state).toBe('unloaded')
    const drawing = await drawingImage()
    const landscape = await landscapeImage()
    const first = classifier.classify(drawing)
    // The load has only begun: the second scan is queued behind it.
    expect(classifier.state).toBe('loading')
    const second = classifier.classify(landscape)
    expect(classifier.queueDepth).toBe(2)
    const [a, b] = await Promise.all([first, second])
    expect(topClass(a)).toBe('Drawing')
    expect(a.Drawing).toBeGreaterThanOrEqual(CLEAR_TOP)
    expect(topClass(b)).toBe('Neutral')
    expect(b.Neutral).toBeGreaterThanOrEqual(CLEAR_TOP)
    expect(events).toEqual(['loaded'])
    // 0: kept once loaded.
    expect(classifier.state).toBe('loaded')
  }, 60_000)

  test('after the idle time the Worker is terminated; the next scan loads the model again, with the right verdict', async () => {
    // 1 ms: the model is unloaded as soon as it has nothing to do.
    const { classifier, events, next } = watched(1)
    closing.push(classifier)
    const unloaded = next('unloaded')
    const a = await classifier.classify(await landscapeImage())
    expect(topClass(a)).toBe('Neutral')
    await unloaded
    expect(classifier.state).toBe('unloaded')
    const again = next('unloaded')
    const b = await classifier.classify(await drawingImage())
    expect(topClass(b)).toBe('Drawing')
    expect(b.Drawing).toBeGreaterThanOrEqual(CLEAR_TOP)
    await again
    expect(events).toEqual(['loaded', 'unloaded', 'loaded', 'unloaded'])
  }, 60_000)
})

describe('the server (NSFW_IDLE_UNLOAD_SECONDS)', () => {
  test('loads no model at start; its web uploads load it, it is unloaded when idle, and a later upload is still scanned right', async () => {
    const logged = spyOn(console, 'log')
    const lines = () => logged.mock.calls.map((c) => String(c[0]))
    const count = (msg: string) => lines().filter((l) => l.includes(`"msg":"${msg}"`)).length
    // The real classifier as the server builds it from its configuration (the helper's neutral fake left out).
    const t = await startTestServer({ NSFW_IDLE_UNLOAD_SECONDS: '1', NSFW_BACKEND: 'wasm' }, { classifier: undefined })
    try {
      const model = t.server.deps.classifier as NsfwClassifier
      expect((await t.fetch('/healthz')).status).toBe(200)
      expect(model.state).toBe('unloaded')
      const upload = async (bytes: Uint8Array<ArrayBuffer>) => {
        const res = await t.json('/api/upload', { method: 'POST', body: uploadForm([{ bytes }]) })
        expect(res.status).toBe(201)
        return (await t.server.db.select().from(images).where(eq(images.id, res.body.id)))[0]
      }
      expect(await upload(await landscapeJpeg())).toMatchObject({ nsfw: false, scanStatus: 'done' })
      expect(count('nsfw model loaded')).toBe(1)
      // Waits for the unload as it is logged (an event, not a time).
      while (count('nsfw model unloaded') === 0) await Bun.sleep(50)
      expect(model.state).toBe('unloaded')
      expect(await upload(await drawingPng())).toMatchObject({ nsfw: false, scanStatus: 'done' })
      expect(count('nsfw model loaded')).toBe(2)
    } finally {
      logged.mockRestore()
      await t.stop()
    }
  }, 60_000)
})
