import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { albumImages, albums } from '../../src/db/schema'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'

type Account = Awaited<ReturnType<typeof userWithKey>>

let t: TestServer
let alice: Account
const id: Record<string, string> = {}

let seed = 500
async function upload(name: string, fields: Record<string, string> = {}) {
  const parts: UploadPart[] = [{ bytes: await makeImage('png', 16, 12, seed++), name }]
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: alice.keyHeader,
    body: uploadForm(parts, fields),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.id as string
}

const search = (q: string, extra = '') => t.json(`/api/search?q=${encodeURIComponent(q)}${extra}`)
async function found(q: string): Promise<string[]> {
  const res = await search(q)
  expect(res.status).toBe(200)
  return res.body.images.map((i: { id: string }) => i.id).sort()
}
const sorted = (...names: string[]) => names.map((n) => id[n]).sort()

const albumId = async (title: string) => (await t.server.db.select().from(albums).where(eq(albums.title, title)))[0]!.id

beforeAll(async () => {
  t = await startTestServer({}, { classifier: fakeClassifier().classifier, rescan: { intervalMs: 3_600_000 } })
  alice = await userWithKey(t)
  id.sunset = await upload('Sunset_Beach-2024.PNG')
  id.lake = await upload('mountain lake.jpg')
  id.cafe = await upload('Café Résumé.png')
  id.orange = await upload('orange or near.png')
  // Upload into folders: each is created as a public album, since the uploads are public.
  id.holiday = await upload('plain-one.png', { folder: 'Holiday Trip' })
  id.secret = await upload('plain-two.png', { folder: 'Secret Garden' })
  id.both = await upload('plain-three.png', { folder: 'Holiday Trip' })
})
afterAll(() => t.stop())

describe('search by filename', () => {
  test('each word of q matches a word prefix, case-insensitively', async () => {
    expect(await found('sun')).toEqual(sorted('sunset'))
    expect(await found('SUNSET')).toEqual(sorted('sunset'))
    expect(await found('sUnSeT')).toEqual(sorted('sunset'))
    // Words are split at every character that is not a letter or digit: `_`, `-`, `.`, space.
    expect(await found('beach')).toEqual(sorted('sunset'))
    expect(await found('2024')).toEqual(sorted('sunset'))
    expect(await found('20')).toEqual(sorted('sunset'))
    expect(await found('mount')).toEqual(sorted('lake'))
  })

  test('a word must match at the start of a word', async () => {
    expect(await found('unset')).toEqual([])
    expect(await found('each')).toEqual([])
    expect(await found('ake')).toEqual([])
  })

  test('every word must match', async () => {
    expect(await found('sun beach')).toEqual(sorted('sunset'))
    expect(await found('beach sun')).toEqual(sorted('sunset'))
    expect(await found('sun lake')).toEqual([])
  })

  test('q is split like filenames are: punctuation in q separates words', async () => {
    expect(await found('sunset_beach')).toEqual(sorted('sunset'))
    expect(await found('sunset-beach.png')).toEqual(sorted('sunset'))
    expect(await found('  mountain   lake  ')).toEqual(sorted('lake'))
  })

  test('accents are ignored both ways', async () => {
    expect(await found('cafe')).toEqual(sorted('cafe'))
    expect(await found('CAFÉ résumé')).toEqual(sorted('cafe'))
    expect(await found('resu')).toEqual(sorted('cafe'))
  })

  test('a deleted image leaves the results at once', async () => {
    const temp = await upload('ephemeral-file.png')
    expect(await found('ephemeral')).toEqual([temp])
    const del = await t.json(`/api/v1/image/${temp}`, { method: 'DELETE', headers: alice.keyHeader })
    expect(del.status).toBe(200)
    expect(await found('ephemeral')).toEqual([])
  })
})

describe('search by album title', () => {
  test('the title of a public album holding the image matches', async () => {
    expect(await found('holiday')).toEqual(sorted('holiday', 'both'))
    expect(await found('TRIP holi')).toEqual(sorted('holiday', 'both'))
    expect(await found('secret garden')).toEqual(sorted('secret'))
  })

  test("a private album's title never matches; publishing it again does", async () => {
    const secret = await albumId('Secret Garden')
    await t.server.db.update(albums).set({ isPublic: false }).where(eq(albums.id, secret))
    expect(await found('secret')).toEqual([])
    // The image itself is public, so its filename still finds it.
    expect(await found('plain two')).toEqual(sorted('secret'))
    await t.server.db.update(albums).set({ isPublic: true }).where(eq(albums.id, secret))
    expect(await found('secret')).toEqual(sorted('secret'))
  })

  test('renaming, removing from, and deleting an album update the results', async () => {
    const holiday = await albumId('Holiday Trip')
    await t.server.db.update(albums).set({ title: 'Winter Break' }).where(eq(albums.id, holiday))
    expect(await found('holiday')).toEqual([])
    expect(await found('winter')).toEqual(sorted('holiday', 'both'))

    await t.server.db.delete(albumImages).where(eq(albumImages.imageId, id.both))
    expect(await found('winter')).toEqual(sorted('holiday'))
    await t.server.db.insert(albumImages).values({ albumId: holiday, imageId: id.both })
    expect(await found('winter')).toEqual(sorted('holiday', 'both'))

    await t.server.db.update(albums).set({ deletedAt: new Date() }).where(eq(albums.id, holiday))
    expect(await found('winter')).toEqual([])
  })

  test('all words must match the filename, or all one album title', async () => {
    // "plain" is in the filename, "garden" only in the album title: neither source holds both.
    expect(await found('plain garden')).toEqual([])
  })
})

describe('hostile and empty queries', () => {
  test('q missing, empty, blank or without any letter or digit: 400 with an error', async () => {
    for (const path of [
      '/api/search',
      '/api/search?q=',
      '/api/search?q=%20%20',
      `/api/search?q=${encodeURIComponent('!!! ... ---')}`,
    ]) {
      const res = await t.json(path)
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
    }
  })

  test('FTS syntax in q is only ever words: 200 or 400, never 500', async () => {
    const attempts = [
      '"',
      '""',
      '*',
      'sun*',
      '"sun',
      'NEAR(',
      'NEAR(sun lake)',
      'OR',
      'sun OR lake',
      'sun AND',
      'NOT sun',
      'sun NOT lake',
      '-sun',
      '^sun',
      'body:sun',
      '{body}: sun',
      '(',
      ')',
      'sun)',
      '+',
      '\\',
      "'; DROP TABLE images; --",
      '%',
      '_',
      '\u0000',
      '🙂',
      'a'.repeat(255),
    ]
    for (const q of attempts) {
      const res = await search(q)
      expect([200, 400]).toContain(res.status)
      if (res.status === 400) expect(typeof res.body.error).toBe('string')
      else expect(Array.isArray(res.body.images)).toBe(true)
    }
    // The search still works afterwards, and nothing was dropped.
    expect(await found('sun')).toEqual(sorted('sunset'))
  })

  test('operators are plain words: OR, AND and NEAR never combine terms', async () => {
    expect(await found('sun OR lake')).toEqual([])
    expect(await found('sun*')).toEqual(sorted('sunset'))
    expect(await found('NOT sun')).toEqual([])
    // As words they are prefixes like any other: "orange or near.png" holds "or" and "near".
    expect(await found('OR')).toEqual(sorted('orange'))
    expect(await found('NEAR(')).toEqual(sorted('orange'))
  })

  test('an overlong q or too many words: 400', async () => {
    expect((await search('a'.repeat(257))).status).toBe(400)
    expect((await search(Array.from({ length: 17 }, (_, i) => `w${i}`).join(' '))).status).toBe(400)
  })
})
