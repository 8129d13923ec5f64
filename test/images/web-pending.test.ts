import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { eventually, registerUser, startTestServer, type TestServer } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'

// A classifier that fails or never answers must never lose an upload: the image is stored, hidden from the public
// feeds while its scan is pending, and the background rescan publishes (or flags) it once the classifier works again.
const SCAN_TIMEOUT_MS = 300
const fake = fakeClassifier('neutral')
let t: TestServer

beforeAll(async () => {
  t = await startTestServer(
    { NSFW_SCAN_TIMEOUT_MS: String(SCAN_TIMEOUT_MS), TRUST_PROXY: 'true' },
    { classifier: fake.classifier, rescan: { intervalMs: 100, maxIntervalMs: 400 } },
  )
})
afterAll(() => t.stop())

let ipCounter = 1
function webUpload(parts: UploadPart[], headers: Record<string, string> = {}) {
  return t.json('/api/upload', {
    method: 'POST',
    headers: { 'x-forwarded-for': `192.0.2.${ipCounter++}`, ...headers },
    body: uploadForm(parts),
  })
}

const row = async (id: string) => (await t.server.db.select().from(images).where(eq(images.id, id)))[0]
const galleryIds = async () =>
  (await t.json('/api/gallery?limit=40')).body.images.map((i: { id: string }) => i.id) as string[]
const searchIds = async (q: string) =>
  (await t.json(`/api/search?q=${encodeURIComponent(q)}`)).body.images.map((i: { id: string }) => i.id) as string[]

const waitFor = (condition: () => Promise<boolean> | boolean) => eventually(condition, undefined, 'the rescan')

async function expectPendingAndHidden(id: string, filenameWord: string) {
  expect((await t.json(`/api/v1/image/${id}`)).status).toBe(200)
  expect((await t.fetch(`/cdn/${id}.png`)).status).toBe(200)
  expect((await row(id))?.scanStatus).toBe('pending')
  expect(await galleryIds()).not.toContain(id)
  expect(await searchIds(filenameWord)).not.toContain(id)
}

describe('a failing classifier', () => {
  test('a throwing classifier: stored, pending, hidden; the rescan publishes it once the classifier works', async () => {
    fake.state.mode = 'throw'
    const res = await webUpload([{ bytes: await makeImage('png', 40, 30, 1), name: 'thrown-scan.png' }])
    expect(res.status).toBe(201)
    expect(res.body.nsfw).toBe(false)
    await expectPendingAndHidden(res.body.id, 'thrown')

    // Background passes keep failing while the classifier is down.
    const calls = fake.state.calls
    await waitFor(() => fake.state.calls > calls + 1)
    expect((await row(res.body.id))?.scanStatus).toBe('pending')
    expect(await galleryIds()).not.toContain(res.body.id)

    fake.state.mode = 'neutral'
    await waitFor(async () => (await row(res.body.id))?.scanStatus === 'done')
    expect((await row(res.body.id))?.nsfw).toBe(false)
    expect(await galleryIds()).toContain(res.body.id)
    expect(await searchIds('thrown')).toEqual([res.body.id])
  })

  test('a classifier that never answers: the upload still completes after the scan deadline, pending', async () => {
    fake.state.mode = 'hang'
    const started = Date.now()
    const res = await webUpload([{ bytes: await makeImage('png', 40, 30, 2), name: 'hanging-scan.png' }])
    // Answered at all (the classifier never does): the deadline ended the wait, not before it.
    expect(res.status).toBe(201)
    expect(Date.now() - started).toBeGreaterThanOrEqual(SCAN_TIMEOUT_MS - 20)
    await expectPendingAndHidden(res.body.id, 'hanging')

    fake.state.mode = 'neutral'
    await waitFor(async () => (await galleryIds()).includes(res.body.id))
    expect((await row(res.body.id))?.scanStatus).toBe('done')
  })

  test('a rescan that finds mature content flags it: out of the gallery, in the profile with nsfw: true', async () => {
    const user = await registerUser(t)
    fake.state.mode = 'throw'
    const res = await webUpload([{ bytes: await makeImage('png', 40, 30, 3), name: 'later-flagged.png' }], user.bearer)
    expect(res.status).toBe(201)
    await expectPendingAndHidden(res.body.id, 'later')
    // Pending images are left out of the profile as well.
    expect((await t.json(`/api/users/${user.user.username}`)).body.total).toBe(0)

    fake.state.mode = 'porn'
    await waitFor(async () => (await row(res.body.id))?.scanStatus === 'done')
    expect((await row(res.body.id))?.nsfw).toBe(true)
    expect(await galleryIds()).not.toContain(res.body.id)
    expect(await searchIds('later')).not.toContain(res.body.id)
    const profile = (await t.json(`/api/users/${user.user.username}`)).body
    expect(profile.images.map((i: { id: string; nsfw: boolean }) => [i.id, i.nsfw])).toEqual([[res.body.id, true]])
    expect((await t.json(`/api/v1/image/${res.body.id}`)).body.data.nsfw).toBe(true)
  })

  test('a pending image deleted before its rescan is simply forgotten', async () => {
    fake.state.mode = 'throw'
    const res = await webUpload([{ bytes: await makeImage('png', 40, 30, 4), name: 'gone.png' }])
    expect((await row(res.body.id))?.scanStatus).toBe('pending')
    const del = await t.json(`/api/v1/image/${res.body.id}`, {
      method: 'DELETE',
      headers: { 'x-delete-token': res.body.deleteToken },
    })
    expect(del.status).toBe(200)
    fake.state.mode = 'neutral'
    await t.server.rescanner.runOnce()
    // A pass that started after the delete no longer sees it.
    const pass = await t.server.rescanner.runOnce()
    expect(pass.failed).toBe(0)
    expect(t.server.rescanner.backingOff).toBe(0)
    expect(await row(res.body.id)).toBeUndefined()
    expect((await t.json('/healthz')).status).toBe(200)
  })
})
