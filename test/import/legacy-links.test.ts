import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../../src/config'
import { LEGACY_MAX_BYTES, LEGACY_MAX_LINES, legacyRedirectsFrom } from '../../src/modules/import/model'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

const root = join(import.meta.dir, '..', '..')
const scratch = mkdtempSync(join(tmpdir(), 'imghost-legacy-'))
let t: TestServer
let image: { id: string }
const viewerOf = () => `${t.url}/i/${image.id}`

const mapFile = (name: string, text: string) => {
  const path = join(scratch, name)
  writeFileSync(path, text)
  return path
}
const refusal = (text: string) => {
  try {
    legacyRedirectsFrom(mapFile('bad.csv', text))
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as Error).message
  }
  throw new Error('accepted')
}

beforeAll(async () => {
  // An image first, then the same data directory started again with a map that names it.
  const first = await startTestServer()
  const user = await userWithKey(first)
  const res = await first.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 20, 20), name: 'a.png' }]),
  })
  image = res.body
  await first.server.stop()
  const map = mapFile(
    'legacy.csv',
    [
      '# moved from the old host',
      `/old/a.png,${image.id}`,
      `/old/direct.png , ${image.id} , direct`,
      `"/old/with,comma ""quoted"".png",${image.id}`,
      `/old/caf%C3%A9.png,${image.id}`,
      '/old/gone.png,ZZZZ9999',
      `/gallery,${image.id}`,
      '',
    ].join('\r\n'),
  )
  // The same storage, and on PostgreSQL runs the same database with its keys.
  const same = Object.entries(first.env).filter(
    ([name]) =>
      name === 'STORAGE' ||
      name.startsWith('S3_') ||
      (first.env.DATABASE_URL !== undefined && ['DATABASE_URL', 'VARIANT_SECRET', 'TOTP_KEY'].includes(name)),
  )
  t = await startTestServer({ ...Object.fromEntries(same), DATA_DIR: first.dataDir, LEGACY_REDIRECTS: map })
})
afterAll(async () => {
  await t.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe('LEGACY_REDIRECTS', () => {
  const get = (path: string) => t.fetch(path, { redirect: 'manual' })

  test('an old path answers 301 to the viewer page, or to the direct link when its line says direct', async () => {
    const viewer = await get('/old/a.png?size=large')
    expect(viewer.status).toBe(301)
    expect(viewer.headers.get('location')).toBe(viewerOf())
    const direct = await get('/old/direct.png')
    expect(direct.status).toBe(301)
    expect(direct.headers.get('location')).toBe(`${t.url}/cdn/${image.id}.png`)
  })

  test('quoted fields, and either spelling of an encoded character, match', async () => {
    expect((await get('/old/with%2Ccomma%20%22quoted%22.png')).headers.get('location')).toBe(viewerOf())
    expect((await get('/old/caf%C3%A9.png')).headers.get('location')).toBe(viewerOf())
    expect((await get('/old/caf%c3%a9.png')).headers.get('location')).toBe(viewerOf())
  })

  test('unknown paths, images that are not live and malformed escapes are the 404 of today', async () => {
    for (const path of ['/old/b.png', '/old/gone.png', '/old/%E0%A4%A.png']) {
      const res = await t.json(path)
      expect(res).toMatchObject({ status: 404, body: { error: 'Not found' } })
    }
  })

  test('its catch-all GET makes no path known: another method on an unknown path is still 404, a known one 405', async () => {
    const unknown = await t.json('/old/a.png', { method: 'POST' })
    expect(unknown).toMatchObject({ status: 404, body: { error: 'Not found' } })
    expect(unknown.headers.get('allow')).toBeNull()
    const known = await t.fetch('/gallery', { method: 'PUT' })
    expect(known.status).toBe(405)
    expect(known.headers.get('allow')).toBe('GET, HEAD')
  })

  test('a path a route of ours owns is never redirected', async () => {
    const gallery = await get('/gallery')
    expect(gallery.status).toBe(200)
    expect(gallery.headers.get('content-type')).toContain('text/html')
    expect((await get('/old/a.png')).status).toBe(301)
  })
})

describe('a malformed LEGACY_REDIRECTS file is refused at startup', () => {
  test('each fault named with its line', () => {
    expect(refusal('/a.png,abcdEFGH\nno-slash.png,abcdEFGH\n')).toContain('line 2: the old path must be a URL path')
    expect(refusal('/a.png,not-an-id\n')).toContain('line 1: "not-an-id" is not an image id')
    expect(refusal('/a.png,abcdEFGH,sideways\n')).toContain('line 1: the third field must be "direct" or "viewer"')
    expect(refusal('/a.png\n')).toContain('line 1: 1 fields')
    expect(refusal('"/a.png,abcdEFGH\n')).toContain('line 1: unbalanced quotes')
    expect(refusal('/a%ZZ.png,abcdEFGH\n')).toContain('malformed %-escape')
    expect(refusal('/a.png?x=1,abcdEFGH\n')).toContain('no query')
    expect(refusal('/a.png,abcdEFGH\n/a.png,abcdEFGI\n')).toContain('line 2: /a.png is already mapped to abcdEFGH')
    expect(refusal('\n'.repeat(LEGACY_MAX_LINES))).toContain(`more than ${LEGACY_MAX_LINES} lines`)
    expect(refusal('#'.repeat(LEGACY_MAX_BYTES + 1))).toContain(`larger than ${LEGACY_MAX_BYTES} bytes`)
    expect(() => legacyRedirectsFrom(join(scratch, 'missing.csv'))).toThrow(/Invalid LEGACY_REDIRECTS file/)
    // The same line twice with the same target is harmless.
    expect(legacyRedirectsFrom(mapFile('ok.csv', '/a.png,abcdEFGH\n/a.png,abcdEFGH\n'))?.size).toBe(1)
  })

  test('the server does not start, and says why', () => {
    const proc = Bun.spawnSync([process.execPath, join(root, 'src/index.ts')], {
      env: {
        ...process.env,
        // The keys required beside DATABASE_URL on PostgreSQL runs, so the map is what stops it.
        JWT_SECRET: 'test-secret-'.padEnd(48, 'x'),
        VARIANT_SECRET: 'test-variant-secret'.padEnd(48, 'x'),
        TOTP_KEY: 'test-totp-key'.padEnd(48, 'x'),
        DATA_DIR: join(scratch, 'data'),
        PORT: '0',
        LEGACY_REDIRECTS: mapFile('start.csv', `/a.png,abcdEFGH\n/b.png\n`),
      },
      cwd: root,
      timeout: 30_000,
    })
    expect(proc.exitCode).toBe(1)
    expect(proc.stderr.toString()).toContain('Invalid LEGACY_REDIRECTS file')
    expect(proc.stderr.toString()).toContain('line 2: 1 fields')
    // Before anything was touched: no data directory, so no database either.
    expect(existsSync(join(scratch, 'data'))).toBe(false)
  })
})
