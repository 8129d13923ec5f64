import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeImage, makeNoisePng, uploadForm } from '../fixtures'
import { jsonBody, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'

// Answers a person can act on: a wrong method is a 405 naming the right ones, an upload in the wrong type says
// multipart, sizes read in KB/MB with the exact count, schema refusals in words, and file names as the user wrote them.

const MAX_FILE_SIZE = 60_000
let t: TestServer
let user: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startTestServer({ MAX_FILE_SIZE: String(MAX_FILE_SIZE), UNVERIFIED_STORAGE_LIMIT: '5000' })
  user = await userWithKey(t)
})
afterAll(() => t.stop())

describe('405 for a known path asked with another method', () => {
  test('the answer names the methods in Allow and in words', async () => {
    const cases: [string, string, string][] = [
      ['PUT', '/gallery', 'GET, HEAD'],
      ['DELETE', '/api/v1/upload', 'POST'],
      ['POST', '/cdn/abcdefgh.png', 'GET, HEAD'],
      ['PUT', '/api/v1/image/abcdefgh', 'GET, HEAD, PATCH, DELETE, OPTIONS'],
      ['GET', '/api/auth/login', 'POST'],
    ]
    for (const [method, path, allow] of cases) {
      const res = await t.json(path, { method })
      expect([path, res.status]).toEqual([path, 405])
      expect(res.headers.get('allow')).toBe(allow)
      expect(res.body.error).toBe(`Method ${method} not allowed here: use ${allow}`)
    }
  })

  test('an unknown path is still 404, without Allow; the right method still answers', async () => {
    const res = await t.json('/no/such/path', { method: 'PUT' })
    expect(res.status).toBe(404)
    expect(res.headers.get('allow')).toBeNull()
    expect((await t.fetch('/gallery', { method: 'HEAD' })).status).toBe(200)
    expect((await t.fetch('/gallery')).status).toBe(200)
  })
})

describe('an upload in the wrong content type', () => {
  test('says multipart/form-data is expected, on both doors', async () => {
    const bodies: RequestInit[] = [
      jsonBody({ file: 'x' }),
      { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'file=x' },
      { headers: { 'content-type': 'text/plain' }, body: 'x' },
      { headers: { 'content-type': 'image/png' }, body: new Uint8Array([0x89, 0x50]) },
    ]
    for (const [path, auth] of [
      ['/api/v1/upload', user.keyHeader],
      ['/api/upload', {}],
    ] as const) {
      for (const init of bodies) {
        const res = await t.json(path, {
          ...init,
          method: 'POST',
          headers: { ...(init.headers as Record<string, string>), ...auth },
        })
        expect(res.status).toBe(400)
        expect(res.body.error).toBe('Expected a multipart/form-data body with one or more `file` fields')
      }
    }
    // The key is still checked first; the JSON routes still want JSON.
    expect((await t.json('/api/v1/upload', { method: 'POST', ...jsonBody({}) })).status).toBe(401)
    const keys = await t.json('/api/keys', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })
    expect(keys.body.error).toBe('Expected an application/json body')
  })
})

describe('sizes in messages: human units and the byte count', () => {
  test('a file past the per-file limit, by multipart and by tus', async () => {
    const big = await makeNoisePng(200)
    expect(big.length).toBeGreaterThan(MAX_FILE_SIZE)
    const expected = 'File too large: at most 58.6 KB (60000 bytes) per file'
    const res = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: big, name: 'big.png' }]),
    })
    expect(res.status).toBe(413)
    expect(res.body.error).toBe(expected)
    const tus = await t.json('/api/v1/tus', {
      method: 'POST',
      headers: { ...user.keyHeader, 'tus-resumable': '1.0.0', 'upload-length': String(big.length) },
    })
    expect(tus.status).toBe(413)
    expect(tus.body.error).toBe(expected)
  })

  test('a JSON body past its bound, and the storage quota', async () => {
    const huge = await t.json('/api/keys', { method: 'POST', ...jsonBody({ name: 'x'.repeat(1024 * 1024) }) })
    expect(huge.status).toBe(413)
    expect(huge.body.error).toBe('Request body too large: at most 1 MB (1048576 bytes)')
    // 5000 bytes of storage: a 40 KB image does not fit.
    const owner = await userWithKey(t)
    const res = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: await makeNoisePng(100), name: 'q.png' }]),
    })
    expect(res.status).toBe(413)
    expect(res.body.error).toBe('Storage limit reached: 4.9 KB (5000 bytes) of 4.9 KB (5000 bytes) left')
  })
})

describe('validation messages in words', () => {
  test('missing, wrong type, length, enum-like and numeric fields', async () => {
    const cases: [string, string, unknown, string, Record<string, string>?][] = [
      ['POST', '/api/auth/register', {}, 'username is required'],
      ['POST', '/api/auth/register', { username: 'abc', email: 'abc@example.com' }, 'password is required'],
      ['POST', '/api/auth/login', { username: 'abc', password: 5 }, 'password must be a string'],
      ['POST', '/api/keys', { name: '' }, 'name must be 1-100 characters'],
      ['POST', '/api/keys', { name: 'x'.repeat(101) }, 'name must be 1-100 characters'],
      ['PATCH', '/api/v1/image/abcdefgh', { nsfw: 'yes' }, 'nsfw must be true or false'],
      ['PATCH', '/api/images/bulk-embed', { image_ids: [], embed_profile_id: 1 }, 'image_ids must have 1-100 items'],
    ]
    const account = await registerUser(t)
    for (const [method, path, body, message] of cases) {
      const headers = path.startsWith('/api/v1/') ? user.keyHeader : account.bearer
      const res = await t.json(path, { method, ...jsonBody(body, headers) })
      expect([path, res.status, res.body.error]).toEqual([path, 400, message])
    }
    // No body at all where an object is expected.
    const none = await t.json('/api/keys', { method: 'POST', headers: account.bearer })
    expect(none.status).toBe(400)
    expect(none.body.error).toBe('A JSON object body is required')
  })
})

describe('file names as the user wrote them', () => {
  /** One file part with exactly this Content-Disposition tail, as clients write it on the wire. */
  async function rawUpload(disposition: string) {
    const bytes = await makeImage('png', 20, 20, disposition.length)
    const head = `--XB\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: image/png\r\n\r\n`
    const body = Buffer.concat([Buffer.from(head, 'utf8'), Buffer.from(bytes), Buffer.from('\r\n--XB--\r\n')])
    const res = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: { ...user.keyHeader, 'content-type': 'multipart/form-data; boundary=XB' },
      body,
    })
    expect(res.status).toBe(201)
    return res.body
  }

  test('a quote percent-encoded (browsers, curl) and the RFC 5987 form are decoded; nothing else is', async () => {
    expect((await rawUpload('filename="say %22hi%22.png"')).filename).toBe('say "hi".png')
    expect((await rawUpload("filename*=UTF-8''caf%C3%A9%20%22x%22.png")).filename).toBe('café "x".png')
    expect((await rawUpload('filename="café.png"')).filename).toBe('café.png')
    // A % is sent as it is, and line breaks stay encoded: a name is one line.
    expect((await rawUpload('filename="50%.png"')).filename).toBe('50%.png')
    expect((await rawUpload('filename="a%0Ab.png"')).filename).toBe('a%0Ab.png')
  })

  test('a name with quotes sent by fetch (FormData) is stored whole and shown escaped', async () => {
    const res = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 24, 24, 99), name: 'a"b<i>.png' }]),
    })
    expect(res.status).toBe(201)
    expect(res.body.filename).toBe('a"b<i>.png')
    const page = await (await t.fetch(`/i/${res.body.id}`)).text()
    expect(page).toContain('<h1>a&quot;b&lt;i&gt;.png</h1>')
    expect(page).not.toContain('a"b<i>')
  })
})
