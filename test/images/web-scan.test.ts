import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { type Classifier, DEFAULT_NSFW_THRESHOLDS, isMature, type NsfwScores } from '../../src/moderation'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'
import { CLEAR_TOP, topClass, uploadClassifierInput } from '../moderation/images'
import { drawingPng, landscapeJpeg } from '../moderation/samples'
import { sharedClassifier } from '../shared-classifier'

// The verdict tests use the real nsfwjs model in its worker: the run's one shared instance. Thresholds are applied by
// the app to the scores it gets back, so a server with NSFW_PORN_HENTAI_THRESHOLD=0 can share it too. The rule itself
// is checked on scores injected at the classifier boundary (last describe), where the margins can be exact.

const METRICS_TOKEN = 'scan-metrics-token'
const row = async (t: TestServer, id: string) => (await t.server.db.select().from(images).where(eq(images.id, id)))[0]
const scanStatus = async (t: TestServer, id: string) => (await row(t, id))?.scanStatus
const galleryIds = async (t: TestServer) =>
  (await t.json('/api/gallery?limit=40')).body.images.map((i: { id: string }) => i.id) as string[]

function webUpload(
  t: TestServer,
  parts: UploadPart[],
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
) {
  return t.json('/api/upload', { method: 'POST', headers, body: uploadForm(parts, fields) })
}

/** One counter or gauge line of GET /metrics, e.g. `nsfw_scan_failures_total`; undefined when absent. */
async function metric(t: TestServer, series: string): Promise<number | undefined> {
  const text = await (await t.fetch('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

/** The real model, keeping every input it was shown and the scores it answered, as they left it. */
function recording(real: Classifier) {
  const scans: { input: Uint8Array; scores: NsfwScores }[] = []
  const classifier: Classifier = {
    async classify(rgb) {
      const input = rgb.slice()
      const scores = await real.classify(rgb)
      scans.push({ input, scores: { ...scores } })
      return scores
    },
    warm: () => real.warm(),
    close: () => real.close(),
    get queueDepth() {
      return real.queueDepth
    },
  }
  return { classifier, scans }
}

async function startWarm(env: Record<string, string> = {}, classifier: Classifier = sharedClassifier()) {
  const t = await startTestServer(env, { classifier })
  // Loading the model is not part of what is tested; a cold first scan could pass the scan deadline on a slow machine.
  await t.server.deps.classifier.warm()
  return t
}

describe('web uploads are classified by the real model', () => {
  let t: TestServer
  const model = recording(sharedClassifier())
  beforeAll(async () => {
    t = await startWarm({ METRICS_TOKEN }, model.classifier)
  }, 120_000)
  afterAll(() => t.stop())

  test("the model is shown each upload's 224x224 RGB, its verdicts are Drawing and Neutral, and its scores decide the flag unchanged", async () => {
    const drawing = await drawingPng()
    const landscape = await landscapeJpeg()
    const logged = spyOn(console, 'error')
    let res: Awaited<ReturnType<typeof webUpload>>
    let errorLog: string
    try {
      res = await webUpload(t, [
        { bytes: drawing, name: 'cartoon-mushroom.png' },
        { bytes: landscape, name: 'green-meadow.jpg' },
      ])
    } finally {
      // Read before the restore, which forgets the calls.
      errorLog = logged.mock.calls.flat().join('\n')
      logged.mockRestore()
    }
    expect(res.status).toBe(201)
    expect(errorLog).not.toContain('nsfw scan')
    expect(model.scans).toHaveLength(2)

    const thresholds = t.server.deps.config.nsfw.thresholds
    expect(thresholds).toEqual(DEFAULT_NSFW_THRESHOLDS)
    const cases = [
      { bytes: drawing, top: 'Drawing' },
      { bytes: landscape, top: 'Neutral' },
    ] as const
    for (const [i, { bytes, top }] of cases.entries()) {
      const image = res.body.images[i]
      // The pair of the batch is scanned in parallel: each scan is found by the input the pipeline cut for its file.
      const expected = Buffer.from(await uploadClassifierInput(bytes))
      const scan = model.scans.find((s) => expected.equals(s.input))
      expect(scan, `no scan was shown ${image.id}'s pixels`).toBeDefined()
      expect(topClass(scan!.scores)).toBe(top)
      expect(scan!.scores[top]).toBeGreaterThanOrEqual(CLEAR_TOP)
      // The flag is the rule applied to the very scores the model answered (a drawing mistaken for porn would show).
      expect(image.nsfw).toBe(isMature(scan!.scores, thresholds))
      expect(image.nsfw).toBe(false)
      expect(await row(t, image.id)).toMatchObject({ nsfw: false, scanStatus: 'done' })
    }
    const ids = await galleryIds(t)
    for (const image of res.body.images) expect(ids).toContain(image.id)
    // The metrics count both scans and no failure.
    expect(await metric(t, 'nsfw_scan_duration_seconds_count')).toBe(2)
    expect(await metric(t, 'nsfw_scan_failures_total')).toBe(0)
  })

  test("a user's explicit nsfw=true stands, without a scan", async () => {
    const scans = model.scans.length
    const res = await webUpload(t, [{ bytes: await drawingPng() }], { nsfw: 'true' })
    expect(res.status).toBe(201)
    expect(res.body.nsfw).toBe(true)
    expect(model.scans).toHaveLength(scans)
    expect(await galleryIds(t)).not.toContain(res.body.id)
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
    expect(await scanStatus(t, anonymous.body.id)).toBe('done')

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
      const res = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: user.keyHeader,
        body: uploadForm([{ bytes: await drawingPng() }]),
      })
      expect(res.status).toBe(201)
      return { calls: fake.state.calls, nsfw: res.body.nsfw, scanStatus: await scanStatus(t, res.body.id) }
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

describe('the rule, end to end, on scores injected at the classifier boundary (default thresholds)', () => {
  // Whatever the model would say, these are the scores the upload gets: flagged when P(Porn) + P(Hentai) >= 0.5 or
  // P(Sexy) >= 0.8, not just below, pending when the classifier fails. The rescan is kept out of the way.
  const fake = fakeClassifier('neutral')
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer(
      { ANON_UPLOADS_PER_WINDOW: '100' },
      { classifier: fake.classifier, rescan: { intervalMs: 3_600_000 } },
    )
  })
  afterAll(() => t.stop())

  const scores = (s: Partial<NsfwScores>): NsfwScores => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 0, Drawing: 0, ...s })
  const cases: [string, NsfwScores, boolean][] = [
    ['Porn + Hentai exactly at 0.5', scores({ Porn: 0.25, Hentai: 0.25, Neutral: 0.5 }), true],
    ['Hentai alone at 0.5', scores({ Hentai: 0.5, Drawing: 0.5 }), true],
    ['Porn alone at 0.9', scores({ Porn: 0.9, Neutral: 0.1 }), true],
    ['Porn + Hentai just below 0.5', scores({ Porn: 0.25, Hentai: 0.2499, Neutral: 0.5001 }), false],
    ['Sexy exactly at 0.8', scores({ Sexy: 0.8, Neutral: 0.2 }), true],
    ['Sexy just below 0.8', scores({ Sexy: 0.7999, Neutral: 0.2001 }), false],
    [
      'Porn and Sexy high but neither rule reached (Sexy is not in the sum)',
      scores({ Porn: 0.45, Sexy: 0.45, Neutral: 0.1 }),
      false,
    ],
    ['all Drawing', scores({ Drawing: 1 }), false],
  ]
  for (const [name, given, flagged] of cases) {
    test(`${name}: ${flagged ? 'flagged and kept out of the gallery' : 'not flagged, in the gallery'}`, async () => {
      fake.state.mode = given
      const res = await webUpload(t, [{ bytes: await makeImage('png', 40, 30) }])
      expect(res.status).toBe(201)
      expect(res.body.nsfw).toBe(flagged)
      expect(await row(t, res.body.id)).toMatchObject({ nsfw: flagged, scanStatus: 'done' })
      expect((await galleryIds(t)).includes(res.body.id)).toBe(!flagged)
    })
  }

  test('a failing classifier: stored unflagged, pending, and kept out of the gallery', async () => {
    fake.state.mode = 'throw'
    const logged = spyOn(console, 'error').mockImplementation(() => {})
    try {
      const res = await webUpload(t, [{ bytes: await makeImage('png', 40, 30) }])
      expect(res.status).toBe(201)
      expect(res.body.nsfw).toBe(false)
      expect(await row(t, res.body.id)).toMatchObject({ nsfw: false, scanStatus: 'pending' })
      expect(await galleryIds(t)).not.toContain(res.body.id)
    } finally {
      logged.mockRestore()
    }
  })
})
