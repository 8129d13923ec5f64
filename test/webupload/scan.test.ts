import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { uploadForm, type UploadPart } from '../fixtures'
import { registerUser, startTestServer, userWithKey, type TestServer } from '../helpers'
import { sharedClassifier } from '../shared-classifier'
import { fakeClassifier } from './fake-classifier'
import { drawingPng, landscapeJpeg } from './images'

// The verdict tests use the real nsfwjs model in its worker: the run's one shared instance. Thresholds are applied by
// the app to the scores it gets back, so a server with NSFW_PORN_HENTAI_THRESHOLD=0 can share it too.

const scanStatus = (t: TestServer, id: string) => t.server.db.select().from(images).where(eq(images.id, id)).get()?.scanStatus

function webUpload(t: TestServer, parts: UploadPart[], fields: Record<string, string> = {}, headers: Record<string, string> = {}) {
  return t.json('/api/upload', { method: 'POST', headers, body: uploadForm(parts, fields) })
}

async function startWarm(env: Record<string, string> = {}) {
  const t = await startTestServer(env, { classifier: sharedClassifier() })
  // Loading the model is not part of what is tested; a cold first scan could pass the scan deadline on a slow machine.
  await t.server.deps.classifier.warm()
  return t
}

describe('web uploads are classified by the real model', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startWarm()
  }, 120_000)
  afterAll(() => t.stop())

  test('a drawing and a neutral photo come back nsfw: false, scanned, and reach the gallery', async () => {
    const res = await webUpload(t, [
      { bytes: await drawingPng(), name: 'cartoon-house.png' },
      { bytes: await landscapeJpeg(), name: 'green-meadow.jpg' },
    ])
    expect(res.status).toBe(201)
    expect(res.body.images.map((i: { nsfw: boolean }) => i.nsfw)).toEqual([false, false])
    for (const image of res.body.images) expect(scanStatus(t, image.id)).toBe('done')
    const gallery = (await t.json('/api/gallery')).body
    const ids = gallery.images.map((i: { id: string }) => i.id)
    for (const image of res.body.images) expect(ids).toContain(image.id)
  })

  test("a user's explicit nsfw=true stands", async () => {
    const res = await webUpload(t, [{ bytes: await drawingPng() }], { nsfw: 'true' })
    expect(res.status).toBe(201)
    expect(res.body.nsfw).toBe(true)
    const gallery = (await t.json('/api/gallery')).body
    expect(gallery.images.map((i: { id: string }) => i.id)).not.toContain(res.body.id)
  })
})

describe('the verdict decides the flag (threshold 0: everything is mature)', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startWarm({ NSFW_PORN_HENTAI_THRESHOLD: '0' })
  }, 120_000)
  afterAll(() => t.stop())

  test('anonymous and logged-in web uploads come back nsfw: true and stay out of the gallery', async () => {
    const anonymous = await webUpload(t, [{ bytes: await landscapeJpeg() }])
    expect(anonymous.status).toBe(201)
    expect(anonymous.body.nsfw).toBe(true)
    expect(scanStatus(t, anonymous.body.id)).toBe('done')

    const user = await registerUser(t)
    const logged = await webUpload(t, [{ bytes: await drawingPng(), name: 'flagged-drawing.png' }], {}, user.bearer)
    expect(logged.status).toBe(201)
    expect(logged.body.nsfw).toBe(true)

    expect((await t.json('/api/gallery')).body.total).toBe(0)
    expect((await t.json('/api/search?q=flagged')).body.total).toBe(0)
    // The profile shows it, flagged.
    const profile = (await t.json(`/api/users/${user.user.username}`)).body
    expect(profile.images.map((i: { id: string; nsfw: boolean }) => [i.id, i.nsfw])).toEqual([[logged.body.id, true]])
  })
})

describe('SCAN_API_UPLOADS: API-key uploads are scanned only when it is on', () => {
  // A fake that flags everything and counts its calls: what is tested is whether a key upload reaches the classifier.
  async function keyUpload(env: Record<string, string>) {
    const fake = fakeClassifier('porn')
    const t = await startTestServer(env, { classifier: fake.classifier })
    try {
      const user = await userWithKey(t)
      const res = await t.json('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: uploadForm([{ bytes: await drawingPng() }]) })
      expect(res.status).toBe(201)
      return { calls: fake.state.calls, nsfw: res.body.nsfw, scanStatus: scanStatus(t, res.body.id) }
    } finally {
      await t.stop()
    }
  }

  test('on: the classifier is called and its verdict flags the upload', async () => {
    expect(await keyUpload({ SCAN_API_UPLOADS: 'true' })).toEqual({ calls: 1, nsfw: true, scanStatus: 'done' })
  })

  test('off (the default): the classifier is never called', async () => {
    expect(await keyUpload({})).toEqual({ calls: 0, nsfw: false, scanStatus: 'none' })
  })
})
