import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { albumImages, albums } from '../../src/db/schema'
import {
  type Bytes,
  makeBmp,
  makeDecompressionBomb,
  makeIco,
  makeImage,
  svgImage,
  type UploadPart,
  uploadForm,
} from '../fixtures'
import { jsonBody, makeAdmin, startTestServer, storedKeys, type TestServer, userWithKey } from '../helpers'
import { rawRequest } from '../security/support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
})
afterAll(() => t.stop())

function upload(
  parts: UploadPart[],
  fields: Record<string, string> = {},
  headers: Record<string, string> = owner.keyHeader,
) {
  return t.json('/api/v1/upload', { method: 'POST', headers, body: uploadForm(parts, fields) })
}

const storedFiles = () => storedKeys(t)

describe('formats', () => {
  const cases: [string, () => Promise<Bytes> | Bytes, string, string, number, number][] = [
    ['jpeg', () => makeImage('jpeg', 64, 48), 'image/jpeg', 'jpg', 64, 48],
    ['png', () => makeImage('png', 65, 49), 'image/png', 'png', 65, 49],
    ['gif', () => makeImage('gif', 30, 20), 'image/gif', 'gif', 30, 20],
    ['webp', () => makeImage('webp', 40, 30), 'image/webp', 'webp', 40, 30],
    ['tiff', () => makeImage('tiff', 33, 22), 'image/tiff', 'tiff', 33, 22],
    ['avif', () => makeImage('avif', 64, 64), 'image/avif', 'avif', 64, 64],
    ['svg', () => svgImage(120, 80), 'image/svg+xml', 'svg', 120, 80],
    ['bmp', () => makeBmp(20, 10), 'image/bmp', 'bmp', 20, 10],
    ['ico', () => makeIco(32), 'image/x-icon', 'ico', 32, 32],
  ]
  for (const [name, make, mime, ext, width, height] of cases) {
    test(`${name} is accepted with its mime, extension and dimensions`, async () => {
      const bytes = await make()
      const res = await upload([{ bytes, name: `picture.${name}` }])
      expect(res.status).toBe(201)
      expect(res.body).toMatchObject({
        success: true,
        mime,
        width,
        height,
        size: bytes.length,
        visibility: 'public',
        nsfw: false,
      })
      expect(res.body.url).toBe(`${t.url}/cdn/${res.body.id}.${ext}`)
      expect(res.body.thumbnail).toBe(`${t.url}/cdn/medium/${res.body.id}.webp`)
      expect(res.body.viewer).toBe(`${t.url}/i/${res.body.id}`)
      expect(res.body.delete).toBe(`${t.url}/api/v1/image/${res.body.id}`)
      expect(res.body.id).toMatch(/^[A-Za-z0-9]{8}$/)
      const direct = await t.fetch(new URL(res.body.url).pathname)
      expect(direct.status).toBe(200)
      expect(direct.headers.get('content-type')).toBe(mime)
      expect(new Uint8Array(await direct.arrayBuffer())).toEqual(bytes)
    })
  }

  test('the type comes from the bytes, not the name or Content-Type', async () => {
    const jpeg = await makeImage('jpeg')
    const res = await upload([{ bytes: jpeg, name: 'photo.png', type: 'image/png' }])
    expect(res.status).toBe(201)
    expect(res.body.mime).toBe('image/jpeg')
    expect(res.body.url.endsWith('.jpg')).toBe(true)
  })
})

describe('refused files change nothing', () => {
  const refusals: [string, () => Promise<Bytes> | Bytes][] = [
    ['a text file named .png', () => new TextEncoder().encode('hello, I am not an image at all')],
    ['a truncated PNG', async () => (await makeImage('png', 300, 300)).slice(0, 400)],
    ['a decompression bomb', makeDecompressionBomb],
    ['an HTML file', () => new TextEncoder().encode('<html><body><script>alert(1)</script></body></html>')],
  ]
  for (const [name, make] of refusals) {
    test(`${name}: 400 and the server keeps serving`, async () => {
      const before = (await storedFiles()).length
      const res = await upload([{ bytes: await make(), name: 'evil.png', type: 'image/png' }])
      expect(res.status).toBe(400)
      expect(typeof res.body.error).toBe('string')
      // The bomb decodes fine: only the pixel limit, checked from its header, can refuse it.
      if (make === makeDecompressionBomb) expect(res.body.error).toContain('megapixels')
      expect((await storedFiles()).length).toBe(before)
      expect((await t.json('/healthz')).body).toMatchObject({ status: 'ok' })
    })
  }

  test('one bad file in a batch stores none of them', async () => {
    const me = (await t.json('/api/v1/me', { headers: owner.keyHeader })).body
    const before = (await storedFiles()).length
    const res = await upload([{ bytes: await makeImage('png') }, { bytes: new TextEncoder().encode('nope') }])
    expect(res.status).toBe(400)
    const after = (await t.json('/api/v1/me', { headers: owner.keyHeader })).body
    expect(after.totalImages).toBe(me.totalImages)
    expect(after.storage.used).toBe(me.storage.used)
    expect(after.rateLimit.used).toBe(me.rateLimit.used)
    expect((await storedFiles()).length).toBe(before)
  })

  test('no files: 400', async () => {
    const res = await upload([], { visibility: 'public' })
    expect(res.status).toBe(400)
  })

  test('not multipart: 400', async () => {
    const res = await t.json('/api/v1/upload', { method: 'POST', ...jsonBody({ file: 'x' }, owner.keyHeader) })
    expect(res.status).toBe(400)
  })
})

describe('authentication', () => {
  test('no key: 401', async () => {
    const res = await upload([{ bytes: await makeImage('png') }], {}, {})
    expect(res.status).toBe(401)
    expect(typeof res.body.error).toBe('string')
  })
  test('a wrong key: 401', async () => {
    const res = await upload(
      [{ bytes: await makeImage('png') }],
      {},
      { 'x-api-key': 'ihk_notarealkeynotarealkeynotarealkey0000' },
    )
    expect(res.status).toBe(401)
  })
})

describe('visibility and flags', () => {
  for (const form of ['true', '1', 'yes', 'on', 'TRUE', 'Yes']) {
    test(`private=${form} makes the upload private, even with visibility=public`, async () => {
      const res = await upload([{ bytes: await makeImage('png') }], { private: form, visibility: 'public' })
      expect(res.status).toBe(201)
      expect(res.body.visibility).toBe('private')
    })
  }
  test('private=false and other values are ignored', async () => {
    for (const form of ['false', '0', 'nope']) {
      const res = await upload([{ bytes: await makeImage('png') }], { private: form })
      expect(res.body.visibility).toBe('public')
    }
  })
  test('visibility=private', async () => {
    const res = await upload([{ bytes: await makeImage('png') }], { visibility: 'private' })
    expect(res.body.visibility).toBe('private')
  })
  test('an invalid visibility is 400 and stores nothing', async () => {
    const before = (await storedFiles()).length
    for (const v of ['secret', 'Public', 'PRIVATE']) {
      const res = await upload([{ bytes: await makeImage('png') }], { visibility: v })
      expect(res.status).toBe(400)
      expect(res.body.error).toContain('visibility')
    }
    expect((await storedFiles()).length).toBe(before)
  })
  test('nsfw=true flags the upload', async () => {
    const res = await upload([{ bytes: await makeImage('png') }], { nsfw: 'true' })
    expect(res.body.nsfw).toBe(true)
  })
  test('a private account makes every upload private', async () => {
    const other = await userWithKey(t)
    await t.json('/api/account', { method: 'PATCH', ...jsonBody({ privateAccount: true }, other.bearer) })
    const res = await upload([{ bytes: await makeImage('png') }], { visibility: 'public' }, other.keyHeader)
    expect(res.body.visibility).toBe('private')
  })
})

describe('batches', () => {
  test('several files answer { success, images } in order, settings applied to all', async () => {
    const res = await upload(
      [
        { bytes: await makeImage('png', 10, 10), name: 'a.png' },
        { bytes: await makeImage('jpeg', 20, 10), name: 'b.jpg' },
      ],
      { visibility: 'private' },
    )
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    expect(res.body.id).toBeUndefined()
    expect(res.body.images).toHaveLength(2)
    expect(res.body.images.map((i: any) => [i.filename, i.width, i.visibility])).toEqual([
      ['a.png', 10, 'private'],
      ['b.jpg', 20, 'private'],
    ])
    for (const image of res.body.images) expect(image.success).toBeUndefined()
  })
})

describe('folders', () => {
  test('a folder name creates an album once, inheriting the upload visibility', async () => {
    const first = await upload([{ bytes: await makeImage('png') }], { folder: 'Holiday 2026', visibility: 'private' })
    const second = await upload([{ bytes: await makeImage('png', 10, 12) }], { album: 'Holiday 2026' })
    expect(first.status).toBe(201)
    expect(second.status).toBe(201)
    const owned = await t.server.db
      .select({ id: albums.id, title: albums.title, isPublic: albums.isPublic })
      .from(albums)
      .where(eq(albums.userId, owner.user.id))
    const holiday = owned.filter((a) => a.title === 'Holiday 2026')
    expect(holiday).toHaveLength(1)
    expect(holiday[0].isPublic).toBe(false)
    const members = await t.server.db
      .select({ imageId: albumImages.imageId })
      .from(albumImages)
      .where(eq(albumImages.albumId, holiday[0].id))
    expect(members.map((m) => m.imageId).sort()).toEqual([first.body.id, second.body.id].sort())
  })
})

describe('file count: too many files is 400, whatever the body declares', () => {
  const MB = 1024 * 1024
  const usage = async (who: { keyHeader: Record<string, string> }) =>
    (await t.json('/api/v1/me', { headers: who.keyHeader })).body
  const tinyParts = async (n: number) => {
    const bytes = await makeImage('png', 8, 8, 77)
    return Array.from({ length: n }, (_, i) => ({ bytes, name: `many-${i}.png` }))
  }

  test("an account's cap (MAX_FILES_PER_UPLOAD, 15): 15 files are stored; 16 are 400, nothing stored or counted", async () => {
    const user = await userWithKey(t)
    const parts = await tinyParts(16)
    const before = (await storedFiles()).length
    const tooMany = await upload(parts, {}, user.keyHeader)
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.error).toContain('Too many files: at most 15')
    expect((await storedFiles()).length).toBe(before)
    expect(await usage(user)).toMatchObject({ totalImages: 0, storage: { used: 0 }, rateLimit: { used: 0 } })
    const fifteen = await upload(parts.slice(0, 15), {}, user.keyHeader)
    expect(fifteen.status).toBe(201)
    expect(fifteen.body.images).toHaveLength(15)
    expect(await usage(user)).toMatchObject({ totalImages: 15, rateLimit: { used: 15 } })
  })

  test("an admin's cap (ADMIN_MAX_FILES_PER_UPLOAD, 100): 100 files are stored; 101 are 400, nothing stored or counted", async () => {
    const admin = await userWithKey(t)
    await makeAdmin(t, admin.user.id)
    const parts = await tinyParts(101)
    const before = (await storedFiles()).length
    const tooMany = await upload(parts, {}, admin.keyHeader)
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.error).toContain('Too many files: at most 100')
    expect((await storedFiles()).length).toBe(before)
    expect(await usage(admin)).toMatchObject({
      totalImages: 0,
      rateLimit: { used: 0 },
      limits: { maxFilesPerUpload: 100 },
    })
    const hundred = await upload(parts.slice(0, 100), {}, admin.keyHeader)
    expect(hundred.status).toBe(201)
    expect(hundred.body.images).toHaveLength(100)
    expect(new Set(hundred.body.images.map((i: { id: string }) => i.id)).size).toBe(100)
    expect((await storedFiles()).length).toBe(before + 200) // an original and a thumbnail each
    expect(await usage(admin)).toMatchObject({ totalImages: 100, rateLimit: { used: 100 } })
  })

  const BOUNDARY = 'count-before-size'
  const encode = (text: string) => new TextEncoder().encode(text)
  const partHead = (i: number) =>
    encode(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f${i}.png"\r\nContent-Type: image/png\r\n\r\n`,
    )

  /**
   * A multipart body that declares `declared` bytes and sends `complete` small PNG parts, then one more part whose
   * bytes never end (`chunk` bytes every `delayMs`): only the server's answer stops it.
   */
  async function streamed(
    headers: Record<string, string>,
    path: string,
    declared: number,
    complete: number,
    pace: { chunk: number; delayMs: number },
  ) {
    const png = await makeImage('png', 8, 8, 78)
    const counter = { sent: 0 }
    async function* body() {
      for (let i = 0; i <= complete; i++) {
        const chunk = i < complete ? new Uint8Array([...partHead(i), ...png, ...encode('\r\n')]) : partHead(i)
        counter.sent += chunk.length
        yield chunk
      }
      const filler = new Uint8Array(pace.chunk).fill(0x61)
      for (;;) {
        counter.sent += filler.length
        yield filler
        await Bun.sleep(pace.delayMs)
      }
    }
    const head = `POST ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${Object.entries({
      ...headers,
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': String(declared),
    })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`
    const res = await rawRequest(t.server.port, head, body(), 30_000)
    return { status: res.status, error: JSON.parse(res.body).error as string, sent: counter.sent }
  }

  test('16 files declared at 16 x 48 MB (or 10 GB): 400 when the 16th arrives, not 413 for the length; anonymous 6 x 24 MB likewise', async () => {
    const user = await userWithKey(t)
    const before = (await storedFiles()).length
    const callers: [string, string, Record<string, string>, number, number][] = [
      ['API key', '/api/v1/upload', user.keyHeader, 15, 16 * 48 * MB],
      ['API key', '/api/v1/upload', user.keyHeader, 15, 10 * 1024 * MB],
      ['session', '/api/upload', user.bearer, 15, 16 * 48 * MB],
      ['anonymous', '/api/upload', {}, 5, 6 * 24 * MB],
    ]
    for (const [who, path, headers, cap, declared] of callers) {
      // The extra part's bytes trickle, so an answer that waited for a size limit would never come in time.
      const res = await streamed(headers, path, declared, cap, { chunk: 64 * 1024, delayMs: 50 })
      expect(`${who} ${declared}: ${res.status} ${res.error}`).toBe(
        `${who} ${declared}: 400 Too many files: at most ${cap} per upload`,
      )
      expect(res.sent).toBeLessThan(2 * MB)
    }
    expect((await storedFiles()).length).toBe(before)
    expect(await usage(user)).toMatchObject({ totalImages: 0, rateLimit: { used: 0 } })
  })

  test('the stream decides in arrival order: a file past 50 MB before any 16th file is 413', async () => {
    const user = await userWithKey(t)
    const before = (await storedFiles()).length
    // Paced only so the 413 reaches the client between two writes (a write after the server closed resets the connection).
    const res = await streamed(user.keyHeader, '/api/v1/upload', 16 * 48 * MB, 3, { chunk: 256 * 1024, delayMs: 1 })
    expect(res.status).toBe(413)
    expect(res.error).toContain('File too large')
    // The body never ends, so an answer at all means the server stopped reading on its own; how far the client got
    // past 50 MB before it saw the answer depends on socket buffers, not on the rule.
    expect(res.sent).toBeGreaterThan(50 * MB)
    expect((await storedFiles()).length).toBe(before)
  })
})
