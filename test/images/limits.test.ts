import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeImage, makeNoisePng, type UploadPart, uploadForm } from '../fixtures'
import { makeAdmin, startTestServer, storedKeys, type TestServer, testClock, userWithKey } from '../helpers'
import { countingMedia } from '../security/support'
import { expectWindowResets } from '../windows'

// Small limits so the rules can be hit with small files; the defaults are checked by the config tests.
const MAX_FILE = 20_000
const QUOTA = 60_000
let t: TestServer
const clock = testClock(Date.now())

beforeAll(async () => {
  t = await startTestServer(
    {
      MAX_FILE_SIZE: String(MAX_FILE),
      MAX_FILES_PER_UPLOAD: '3',
      UNVERIFIED_STORAGE_LIMIT: String(QUOTA),
      UPLOADS_PER_HOUR: '5',
    },
    { now: clock.now },
  )
})
afterAll(() => t.stop())

const upload = (who: { keyHeader: Record<string, string> }, parts: UploadPart[]) =>
  t.json('/api/v1/upload', { method: 'POST', headers: who.keyHeader, body: uploadForm(parts) })
const me = async (who: { keyHeader: Record<string, string> }) =>
  (await t.json('/api/v1/me', { headers: who.keyHeader })).body
const storedFiles = async () => (await storedKeys(t)).length

describe('limits', () => {
  test('a file over the size limit: 413, nothing stored or counted', async () => {
    const user = await userWithKey(t)
    const big = await makeNoisePng(120)
    expect(big.length).toBeGreaterThan(MAX_FILE)
    const before = await storedFiles()
    const res = await upload(user, [{ bytes: await makeImage('png', 8, 8) }, { bytes: big }])
    expect(res.status).toBe(413)
    expect(typeof res.body.error).toBe('string')
    expect(await storedFiles()).toBe(before)
    expect(await me(user)).toMatchObject({ totalImages: 0, storage: { used: 0 }, rateLimit: { used: 0 } })
  })

  test('more files than allowed: 400, nothing stored', async () => {
    const user = await userWithKey(t)
    const small = await makeImage('png', 8, 8)
    const before = await storedFiles()
    const res = await upload(
      user,
      Array.from({ length: 4 }, () => ({ bytes: small })),
    )
    expect(res.status).toBe(400)
    expect(res.body.error).toContain('Too many files')
    expect(await storedFiles()).toBe(before)
    expect(await me(user)).toMatchObject({ totalImages: 0, storage: { used: 0 }, rateLimit: { used: 0 } })
  })

  test('the storage quota: 413 once a batch would pass it, usage unchanged', async () => {
    const user = await userWithKey(t)
    const file = await makeNoisePng(70)
    expect(file.length).toBeLessThan(MAX_FILE)
    const perBatch = Math.floor(QUOTA / file.length / 2)
    expect(
      (
        await upload(
          user,
          Array.from({ length: Math.min(3, perBatch) }, () => ({ bytes: file })),
        )
      ).status,
    ).toBe(201)
    const usage = await me(user)
    const before = await storedFiles()
    const tooMuch = Math.ceil((usage.storage.remaining + 1) / file.length)
    if (tooMuch > 3) throw new Error(`fixture too small for the quota test: ${file.length} bytes`)
    const res = await upload(
      user,
      Array.from({ length: tooMuch }, () => ({ bytes: file })),
    )
    expect(res.status).toBe(413)
    expect(typeof res.body.error).toBe('string')
    const after = await me(user)
    expect({ used: after.storage.used, images: after.totalImages, window: after.rateLimit.used }).toEqual({
      used: usage.storage.used,
      images: usage.totalImages,
      window: usage.rateLimit.used,
    })
    expect(await storedFiles()).toBe(before)
  })

  test('the hourly window counts files; a batch that does not fit is 429 with headers', async () => {
    const user = await userWithKey(t)
    const small = await makeImage('png', 8, 8)
    const ok = await t.fetch('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: small }, { bytes: small }, { bytes: small }]),
    })
    expect(ok.status).toBe(201)
    expect(ok.headers.get('RateLimit-Limit')).toBe('5')
    expect(ok.headers.get('RateLimit-Remaining')).toBe('2')
    expect(Number(ok.headers.get('RateLimit-Reset'))).toBeGreaterThan(3500)
    const res = await t.fetch('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: small }, { bytes: small }, { bytes: small }]),
    })
    expect(res.status).toBe(429)
    expect((await res.json()).error).toBeString()
    expect(Number(res.headers.get('Retry-After'))).toBeGreaterThan(0)
    expect(res.headers.get('RateLimit-Remaining')).toBe('2')
    const usage = await me(user)
    expect(usage.rateLimit).toMatchObject({ limit: 5, used: 3, remaining: 2 })
    expect(usage.totalImages).toBe(3)
  })

  test('the hourly window, shared by API and web uploads, resets: 429 on its last millisecond, then a full hour from the next upload', async () => {
    const user = await userWithKey(t)
    const small = await makeImage('png', 8, 8)
    let door = 0
    await expectWindowResets(clock, {
      limit: 5,
      windowMs: 3_600_000,
      headers: true,
      // Batches of at most 3 files (the per-upload cap here), taking turns between the API key and the web session.
      async use(n) {
        const answers = []
        for (let left = n; left > 0; left -= 3) {
          const web = door++ % 2 === 0
          const body = uploadForm(Array.from({ length: Math.min(3, left) }, () => ({ bytes: small })))
          answers.push(
            await t.json(web ? '/api/upload' : '/api/v1/upload', {
              method: 'POST',
              headers: web ? user.bearer : user.keyHeader,
              body,
            }),
          )
        }
        return answers
      },
    })
    // GET /api/v1/me reads the same clock: one upload into a window that has just started.
    expect((await me(user)).rateLimit).toEqual({
      window: '1 hour',
      limit: 5,
      used: 1,
      remaining: 4,
      resetSeconds: 3600,
    })
  })

  test('parallel batches can never overshoot the window', async () => {
    const user = await userWithKey(t)
    const small = await makeImage('png', 8, 8)
    const batch = () => upload(user, [{ bytes: small }, { bytes: small }, { bytes: small }])
    const results = await Promise.all([batch(), batch(), batch()])
    expect(results.filter((r) => r.status === 201)).toHaveLength(1)
    expect(results.filter((r) => r.status === 429)).toHaveLength(2)
    expect((await me(user)).rateLimit.used).toBe(3)
  })

  test('parallel batches can never overshoot the storage quota', async () => {
    const user = await userWithKey(t)
    const file = await makeNoisePng(70)
    const count = Math.floor(QUOTA / file.length / 2) + 1 // each batch fits alone, two do not
    expect(count * file.length).toBeLessThanOrEqual(QUOTA)
    expect(2 * count * file.length).toBeGreaterThan(QUOTA)
    const batch = () =>
      upload(
        user,
        Array.from({ length: Math.min(count, 3) }, () => ({ bytes: file })),
      )
    if (count > 3) throw new Error('fixture too small for the parallel quota test')
    const results = await Promise.all([batch(), batch()])
    expect(results.map((r) => r.status).sort()).toEqual([201, 413])
    expect((await me(user)).storage.used).toBeLessThanOrEqual(QUOTA)
  })

  test('admins are exempt from size, count, quota and window, but their usage is counted', async () => {
    const admin = await userWithKey(t)
    await makeAdmin(t, admin.user.id)
    const big = await makeNoisePng(120)
    const res = await upload(
      admin,
      Array.from({ length: 6 }, () => ({ bytes: big })),
    )
    expect(res.status).toBe(201)
    const usage = await me(admin)
    expect(usage.rateLimit.used).toBe(6)
    expect(usage.storage.limit).toBeNull()
  })
})

describe('parallel uploads beyond the window or the quota are refused before decoding', () => {
  let q: TestServer
  const counted = countingMedia()
  beforeAll(async () => {
    q = await startTestServer(
      {
        MAX_FILE_SIZE: String(MAX_FILE),
        MAX_FILES_PER_UPLOAD: '3',
        UNVERIFIED_STORAGE_LIMIT: String(QUOTA),
        UPLOADS_PER_HOUR: '5',
      },
      { media: counted.media },
    )
  })
  afterAll(() => q.stop())
  const uploadTo = (who: { keyHeader: Record<string, string> }, parts: UploadPart[]) =>
    q.json('/api/v1/upload', { method: 'POST', headers: who.keyHeader, body: uploadForm(parts) })
  const usage = async (who: { keyHeader: Record<string, string> }) =>
    (await q.json('/api/v1/me', { headers: who.keyHeader })).body

  test("the account's window: of three parallel batches of three, one is stored and the other two never decoded", async () => {
    const user = await userWithKey(q)
    const small = await makeImage('png', 8, 8)
    counted.calls.ingest = 0
    const results = await Promise.all(
      Array.from({ length: 3 }, () => uploadTo(user, [{ bytes: small }, { bytes: small }, { bytes: small }])),
    )
    expect(results.map((r) => r.status).sort()).toEqual([201, 429, 429])
    expect(counted.calls.ingest).toBe(3)
    // Nothing stays held by the refused batches: the two files left in the window can be used.
    expect((await uploadTo(user, [{ bytes: small }, { bytes: small }])).status).toBe(201)
  })

  test('the storage quota: of two parallel batches that fit only alone, the refused one is never decoded', async () => {
    const user = await userWithKey(q)
    const file = await makeNoisePng(70)
    const count = Math.min(3, Math.floor(QUOTA / file.length / 2) + 1)
    expect(2 * count * file.length).toBeGreaterThan(QUOTA)
    counted.calls.ingest = 0
    const results = await Promise.all(
      [0, 1].map(() =>
        uploadTo(
          user,
          Array.from({ length: count }, () => ({ bytes: file })),
        ),
      ),
    )
    expect(results.map((r) => r.status).sort()).toEqual([201, 413])
    expect(counted.calls.ingest).toBe(count)
    expect((await usage(user)).storage.used).toBe(count * file.length)
    expect((await uploadTo(user, [{ bytes: await makeImage('png', 8, 8) }])).status).toBe(201)
  })
})
