/**
 * `url` fields on POST /api/v1/upload: fetched (src/net/fetch-url.ts) under the caller's per-file limit, counted with
 * the files, then through the same pipeline. The pictures come from a server started here on 127.0.0.1: a private
 * address, so the uploads that must succeed run with URL_UPLOAD_ALLOW_PRIVATE=true, and the refusals without it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Bytes, chunkedBody, makeImage, stallingBodies, uploadForm } from '../fixtures'
import { startTestServer, storedKeys, type TestServer, userWithKey } from '../helpers'

const MAX_FILE_SIZE = 20_000
const MAX_FILES = 3
let png: Bytes
let jpeg: Bytes
/** Paths the picture server was asked for. */
const seen: string[] = []
/** Ends the streams that stall, once their test is over. */
const stalling = stallingBodies()
let pictures: ReturnType<typeof Bun.serve>
let base = ''

beforeAll(async () => {
  png = await makeImage('png', 30, 20)
  jpeg = await makeImage('jpeg', 64, 48)
  pictures = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch(request) {
      const url = new URL(request.url)
      seen.push(url.pathname)
      switch (url.pathname) {
        case '/holiday.png':
          // A wrong Content-Type: the bytes decide.
          return new Response(png, { headers: { 'Content-Type': 'text/html' } })
        case '/photos/beach.jpg':
          return new Response(jpeg)
        case '/notes.txt':
          return new Response('just some text, not an image at all')
        case '/big-declared':
          return new Response(new Uint8Array(MAX_FILE_SIZE + 1))
        case '/big-chunked':
          return new Response(chunkedBody(5_000, 10))
        case '/stall':
          return new Response(stalling.body(png.slice(0, 16)))
        case '/redirect':
          return new Response(null, { status: 302, headers: { Location: url.searchParams.get('to') ?? '/' } })
        default:
          return new Response('not here', { status: 404 })
      }
    },
  })
  base = `http://127.0.0.1:${pictures.port}`
})

afterEach(() => {
  stalling.release()
  seen.length = 0
})

afterAll(() => pictures.stop(true))

/** A multipart upload with these `url` fields (and files), as the API key's owner. */
function uploadUrls(
  t: TestServer,
  keyHeader: Record<string, string>,
  urls: string[],
  files: { bytes: Bytes; name: string }[] = [],
) {
  const form = uploadForm(files)
  for (const url of urls) form.append('url', url)
  return t.json('/api/v1/upload', { method: 'POST', headers: keyHeader, body: form })
}

describe('URL_UPLOAD_ALLOW_PRIVATE=true (the picture server is local)', () => {
  let t: TestServer
  let keyHeader: Record<string, string>

  beforeAll(async () => {
    t = await startTestServer({
      URL_UPLOAD_ALLOW_PRIVATE: 'true',
      URL_UPLOAD_TIMEOUT_MS: '500',
      MAX_FILE_SIZE: String(MAX_FILE_SIZE),
      MAX_FILES_PER_UPLOAD: String(MAX_FILES),
    })
    keyHeader = (await userWithKey(t)).keyHeader
  })
  afterAll(() => t.stop())

  /** The answer is a 400 that says `what`; nothing was stored and no temp file is left. */
  async function refused(urls: string[], what: string, files: { bytes: Bytes; name: string }[] = []) {
    const res = await uploadUrls(t, keyHeader, urls, files)
    expect(res.status).toBe(400)
    expect(res.body.error).toContain(what)
    expect(await storedKeys(t)).toEqual([])
    expect(readdirSync(join(t.dataDir, 'tmp'))).toEqual([])
    return res.body.error as string
  }

  test('a URL is fetched and stored: sniffed from its bytes, its dimensions, the name from its path', async () => {
    const res = await uploadUrls(t, keyHeader, [`${base}/holiday.png`])
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      success: true,
      mime: 'image/png',
      width: 30,
      height: 20,
      size: png.length,
      filename: 'holiday.png',
    })
    expect(res.body.url).toBe(`${t.url}/cdn/${res.body.id}.png`)
    const stored = await t.fetch(`/cdn/${res.body.id}.png`)
    expect(new Uint8Array(await stored.arrayBuffer())).toEqual(png)
  })

  test('files and URLs in one upload: the files first, then the URLs in order', async () => {
    const res = await uploadUrls(
      t,
      keyHeader,
      [`${base}/photos/beach.jpg`, `${base}/redirect?to=/holiday.png`],
      [{ bytes: png, name: 'sent.png' }],
    )
    expect(res.status).toBe(201)
    expect(res.body.images.map((i: { mime: string; width: number }) => [i.mime, i.width])).toEqual([
      ['image/png', 30],
      ['image/jpeg', 64],
      ['image/png', 30],
    ])
  })

  test('files and URLs are counted together against the per-upload count, before any fetch', async () => {
    const before = (await storedKeys(t)).length
    const res = await uploadUrls(
      t,
      keyHeader,
      [`${base}/holiday.png`, `${base}/photos/beach.jpg`],
      [
        { bytes: png, name: 'a.png' },
        { bytes: png, name: 'b.png' },
      ],
    )
    expect(res.status).toBe(400)
    expect(res.body.error).toBe(`Too many files: at most ${MAX_FILES} per upload`)
    expect(seen).toEqual([])
    expect((await storedKeys(t)).length).toBe(before)
    expect(readdirSync(join(t.dataDir, 'tmp'))).toEqual([])
  })

  describe('a URL that fails is a 400 that says which failure, and nothing is stored', () => {
    // Each refusal below checks the store is empty: start from an empty one.
    beforeAll(async () => {
      for (const key of await storedKeys(t)) await t.server.deps.storage.delete(key)
    })

    test('an HTTP error status', async () => {
      expect(await refused([`${base}/gone.png`], 'HTTP 404')).toBe(`url ${base}/gone.png: the server answered HTTP 404`)
    })

    test('over the per-file limit, declared and undeclared', async () => {
      await refused([`${base}/big-declared`], `too large: at most 19.5 KB (${MAX_FILE_SIZE} bytes) per file`)
      await refused([`${base}/big-chunked`], `too large: at most 19.5 KB (${MAX_FILE_SIZE} bytes) per file`)
    })

    test('a server that stalls: the time budget answers', async () => {
      await refused([`${base}/stall`], 'no complete answer within 500 ms')
    })

    test('not an image: the pipeline sniffs the bytes', async () => {
      expect(await refused([`${base}/notes.txt`], 'notes.txt')).toBe('notes.txt: File is not a supported image')
    })

    test('schemes other than http(s)', async () => {
      await refused(['file:///etc/passwd'], 'must be http or https (not file:)')
      await refused(['ftp://example.com/a.png'], 'must be http or https (not ftp:)')
    })

    test('one bad URL refuses the whole upload, its file and its good URLs included', async () => {
      await refused([`${base}/holiday.png`, `${base}/gone.png`], 'HTTP 404', [{ bytes: png, name: 'a.png' }])
    })
  })
})

describe('URL_UPLOAD_ALLOW_PRIVATE off (the default): private addresses are refused before any request', () => {
  let t: TestServer
  let keyHeader: Record<string, string>

  beforeAll(async () => {
    t = await startTestServer()
    keyHeader = (await userWithKey(t)).keyHeader
  })
  afterAll(() => t.stop())

  const cases = [
    ['an address on loopback', () => `${base}/holiday.png`],
    ['a name that resolves to 127.0.0.1', () => `http://localhost:${pictures.port}/holiday.png`],
    ['a redirect chain to a local picture', () => `${base}/redirect?to=/redirect?to=/holiday.png`],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
  ] as const
  for (const [what, url] of cases) {
    test(what, async () => {
      const res = await uploadUrls(t, keyHeader, [url()])
      expect(res.status).toBe(400)
      expect(res.body.error).toContain('is not allowed')
      // What a name resolves to is never told.
      if (url().includes('localhost')) expect(res.body.error).not.toContain('127.0.0.1')
      expect(seen).toEqual([])
      expect(await storedKeys(t)).toEqual([])
    })
  }
})
