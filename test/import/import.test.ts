import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { and, asc, count, eq } from 'drizzle-orm'
import { albumImages, albums, images as imageRows } from '../../src/db/schema'
import { makeImage } from '../fixtures'
import { makeAdmin, registerUser, runCli, startTestServer, type TestServer, userWithKey } from '../helpers'

const root = join(import.meta.dir, '..', '..')
const scratch = mkdtempSync(join(tmpdir(), 'imghost-import-'))
/** The server whose DATA_DIR the imports write into, running all along (restarted once, for LEGACY_REDIRECTS). */
let t: TestServer
let user: Awaited<ReturnType<typeof userWithKey>>

/**
 * The same storage as the server's (STORAGE=s3 runs: the bucket and prefix of its data directory), and on PostgreSQL
 * runs its database with the keys required beside it (the suite's own DATABASE_URL is another database).
 */
const DATABASE_VARIABLES = ['DATABASE_URL', 'JWT_SECRET', 'VARIANT_SECRET', 'TOTP_KEY']
const storageEnvOf = (server: TestServer) =>
  Object.fromEntries(
    Object.entries(server.env).filter(
      ([name]) =>
        name === 'STORAGE' ||
        name.startsWith('S3_') ||
        (server.env.DATABASE_URL !== undefined && DATABASE_VARIABLES.includes(name)),
    ),
  )

const cli = (...args: string[]) => cliWith({}, ...args)

async function cliWith(env: Record<string, string>, ...args: string[]) {
  const { code, out, err } = await runCli(['import', ...args], {
    ...process.env,
    ...storageEnvOf(t),
    DATA_DIR: t.dataDir,
    ...env,
  })
  return { code, summary: out.startsWith('{') ? JSON.parse(out) : null, err }
}

const rowsOf = async (userId: number) =>
  (
    await t.server.db
      .select({ id: imageRows.id, filename: imageRows.filename, createdAt: imageRows.createdAt, ext: imageRows.ext })
      .from(imageRows)
      .where(eq(imageRows.userId, userId))
      .orderBy(asc(imageRows.filename))
  ).map((r) => ({ ...r, created_at: r.createdAt.getTime() }))

/** Writes a file with a set modification time (seconds since the epoch). */
function put(dir: string, path: string, bytes: Uint8Array | string, mtime: number) {
  const full = join(dir, path)
  mkdirSync(dirname(full), { recursive: true })
  writeFileSync(full, bytes)
  utimesSync(full, mtime, mtime)
}

const tree = join(scratch, 'site')
/** The images of the tree, by path, with their modification times. */
const images: Record<string, number> = {
  'photos/2019/cat.png': 1_546_300_800, // 2019-01-01
  'photos/2019/summer/beach.jpg': 1_561_939_200,
  'photos/my cat.webp': 1_577_836_800,
  'anim.gif': 1_600_000_000,
}

beforeAll(async () => {
  t = await startTestServer()
  user = await userWithKey(t)
  let seed = 1
  for (const [path, mtime] of Object.entries(images)) {
    const format = path.endsWith('.png')
      ? 'png'
      : path.endsWith('.jpg')
        ? 'jpeg'
        : path.endsWith('.gif')
          ? 'gif'
          : 'webp'
    put(tree, path, await makeImage(format, 40, 30, seed++), mtime)
  }
  put(tree, 'photos/notes.txt', 'not an image\n', 1_600_000_000)
  // The same bytes under another name: imported once.
  mkdirSync(join(tree, 'zcopy'))
  copyFileSync(join(tree, 'photos/2019/cat.png'), join(tree, 'zcopy/cat-again.png'))
  // Links are not followed: neither to a file outside the tree nor in a loop.
  put(scratch, 'outside.png', await makeImage('png', 20, 20, 99), 1)
  symlinkSync(join(scratch, 'outside.png'), join(tree, 'photos/outside.png'))
  symlinkSync(tree, join(tree, 'loop'))
  // A PNG signature followed by nothing a decoder can use.
  put(tree, 'photos/2019/broken.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]), 1)
})
afterAll(async () => {
  await t.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe('import into a data directory whose server is running', () => {
  const map = join(scratch, 'legacy.csv')

  test('--dry-run lists what would happen and changes nothing', async () => {
    const run = await cli(tree, '--user', user.user.username, '--album', 'Old site', '--dry-run', '--map', map)
    expect(run.code).toBe(0)
    // A dry run decodes nothing: the broken image (its bytes start as a PNG's) would be tried.
    expect(run.summary).toMatchObject({ imported: 5, skipped: 2, notImages: 1, failed: 0, dryRun: true })
    expect(run.err).toContain('would import photos/2019/cat.png')
    expect(run.err).toContain('would skip photos/notes.txt: not an image')
    expect(run.err).toContain('would skip zcopy/cat-again.png: already imported (same bytes as a file before it)')
    expect(await rowsOf(user.user.id)).toEqual([])
    expect(await t.server.db.select({ id: albums.id }).from(albums).where(eq(albums.userId, user.user.id))).toEqual([])
    expect(() => readFileSync(map)).toThrow()
  })

  test('imports every image once, keeping names and modification times; a broken image fails alone', async () => {
    const run = await cli(tree, '--user', user.user.username, '--album', 'Old site', '--map', map)
    expect(run.code).toBe(2)
    expect(run.summary).toMatchObject({ imported: 4, skipped: 2, notImages: 1, failed: 1, quotaIgnored: false })
    expect(run.summary.errors).toHaveLength(1)
    expect(run.summary.errors[0].path).toBe(join('photos', '2019', 'broken.png'))
    expect(run.err).toContain('quota')

    const rows = await rowsOf(user.user.id)
    expect(rows.map((r) => r.filename).sort()).toEqual(['anim.gif', 'beach.jpg', 'cat.png', 'my cat.webp'])
    for (const [path, mtime] of Object.entries(images)) {
      const row = rows.find((r) => path.endsWith(r.filename))!
      expect(row.created_at).toBe(mtime * 1000)
      // The running server serves what another process stored: its metadata, with the file's time, and its bytes.
      const details = await t.json(`/api/v1/image/${row.id}`)
      expect(details.status).toBe(200)
      expect(details.body.data.uploadedAt).toBe(new Date(mtime * 1000).toISOString())
      const file = await t.fetch(`/cdn/${row.id}.${row.ext}`)
      expect(file.status).toBe(200)
      expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0)
    }
    const album = await t.server.db
      .select({ n: count() })
      .from(albumImages)
      .innerJoin(albums, eq(albums.id, albumImages.albumId))
      .where(and(eq(albums.title, 'Old site'), eq(albums.userId, user.user.id)))
    expect(album[0].n).toBe(4)
    const lines = readFileSync(map, 'utf8').trim().split('\n').sort()
    const idOf = (name: string) => rows.find((r) => r.filename === name)!.id
    expect(lines).toEqual(
      [
        `/anim.gif,${idOf('anim.gif')}`,
        `/zcopy/cat-again.png,${idOf('cat.png')}`,
        `/photos/2019/cat.png,${idOf('cat.png')}`,
        `/photos/2019/summer/beach.jpg,${idOf('beach.jpg')}`,
        `/photos/my%20cat.webp,${idOf('my cat.webp')}`,
      ].sort(),
    )
  })

  test('a second run imports nothing and maps the images already there', async () => {
    const before = readFileSync(map, 'utf8')
    const run = await cli(tree, '--user', user.user.username, '--album', 'Old site', '--map', map)
    expect(run.code).toBe(2)
    expect(run.summary).toMatchObject({ imported: 0, skipped: 6, notImages: 1, failed: 1 })
    expect(await rowsOf(user.user.id)).toHaveLength(4)
    expect(readFileSync(map, 'utf8').split('\n').sort()).toEqual(before.split('\n').sort())
    // A dry run now finds them all there too.
    const dry = await cli(tree, '--user', user.user.username, '--dry-run')
    expect(dry.summary).toMatchObject({ imported: 1, skipped: 6, failed: 0 })
  })

  test("an account's limits hold, each refusal failing its file; an admin's do not, and the output says so", async () => {
    const small = join(scratch, 'small')
    put(small, 'a.png', await makeImage('png', 30, 30, 101), 1_500_000_000)
    put(small, 'b.png', await makeImage('png', 30, 30, 102), 1_500_000_000)
    const tooLarge = await cliWith({ MAX_FILE_SIZE: '100' }, small, '--user', (await registerUser(t)).user.username)
    expect(tooLarge.code).toBe(2)
    expect(tooLarge.summary).toMatchObject({ imported: 0, failed: 2, quotaIgnored: false })
    expect(tooLarge.summary.errors[0].error).toBe('File too large: at most 100 bytes per file')
    // Room for one of the two files: the second is refused by the quota, alone.
    const room = String(statSync(join(small, 'a.png')).size + statSync(join(small, 'b.png')).size - 1)
    const quota = await cliWith(
      { UNVERIFIED_STORAGE_LIMIT: room },
      small,
      '--user',
      (await registerUser(t)).user.username,
    )
    expect(quota.summary).toMatchObject({ imported: 1, failed: 1 })
    expect(quota.summary.errors[0].error).toStartWith('Storage limit reached')

    const admin = await registerUser(t)
    await makeAdmin(t, admin.user.id)
    const adminRun = await cliWith(
      { MAX_FILE_SIZE: '100', UNVERIFIED_STORAGE_LIMIT: '0' },
      small,
      '--user',
      admin.user.username,
    )
    expect(adminRun.code).toBe(0)
    expect(adminRun.summary).toMatchObject({ imported: 2, failed: 0, quotaIgnored: true })
    expect(adminRun.err).toContain('is an admin: no storage quota')
  })

  test.skipIf(!Bun.which('script'))('a progress line on a terminal only', async () => {
    const one = join(scratch, 'one')
    put(one, 'x.png', await makeImage('png', 24, 24, 201), 1_500_000_000)
    const name = (await registerUser(t)).user.username
    // `script` runs the command on a pseudo-terminal, as an operator's shell would.
    const command = [process.execPath, join(root, 'src/cli.ts'), 'import', one, '--user', name].join(' ')
    const proc = Bun.spawnSync(['script', '-qec', command, '/dev/null'], {
      env: { ...process.env, ...storageEnvOf(t), DATA_DIR: t.dataDir },
      cwd: root,
    })
    expect(proc.exitCode).toBe(0)
    expect(proc.stdout.toString()).toMatch(/import \[#{20}\] 1\/1 [\d.]+\/s ETA 0:00 1 imported, 0 skipped, 0 failed/)
    // Piped (every other run here): no progress line, stderr stays readable in a log.
    const piped = await cli(one, '--user', name)
    expect(piped.summary).toMatchObject({ imported: 0, skipped: 1 })
    expect(piped.err).not.toContain('imported,')
  })

  test('refuses a bad visibility, an unknown account or a missing folder before importing anything', async () => {
    const visibility = await cli(tree, '--user', user.user.username, '--visibility', 'secret')
    expect(visibility.code).toBe(2)
    expect(visibility.err).toContain('Allowed choices are public, private')
    expect((await cli(tree, '--user', 'nobody-here')).err).toContain('No account named nobody-here')
    const unwritable = await cli(tree, '--user', user.user.username, '--map', join(scratch, 'no-such-dir', 'map.csv'))
    expect(unwritable.code).toBe(1)
    expect(unwritable.err).toContain('Cannot write the map')
    expect(await rowsOf(user.user.id)).toHaveLength(4)
    const missing = await cli(join(scratch, 'missing'), '--user', user.user.username)
    expect(missing.code).toBe(1)
    expect(missing.err).toContain('is not a directory')
  })

  test('the map feeds LEGACY_REDIRECTS: old paths answer 301 to the viewer', async () => {
    const rows = await rowsOf(user.user.id)
    const cat = rows.find((r) => r.filename === 'cat.png')!
    const withSpace = rows.find((r) => r.filename === 'my cat.webp')!
    // Stopped, not removed: the same data directory starts again with the map.
    await t.server.stop()
    t = await startTestServer({
      ...storageEnvOf(t),
      DATA_DIR: t.dataDir,
      LEGACY_REDIRECTS: join(scratch, 'legacy.csv'),
    })
    const old = await t.fetch('/photos/2019/cat.png', { redirect: 'manual' })
    expect(old.status).toBe(301)
    expect(old.headers.get('location')).toBe(`${t.url}/i/${cat.id}`)
    const spaced = await t.fetch('/photos/my%20cat.webp', { redirect: 'manual' })
    expect(spaced.headers.get('location')).toBe(`${t.url}/i/${withSpace.id}`)
    expect((await t.json('/photos/2019/dog.png')).status).toBe(404)
    // Deleted: the old link is a 404 again.
    const deleted = await t.fetch(`/api/v1/image/${cat.id}`, { method: 'DELETE', headers: user.keyHeader })
    expect(deleted.status).toBe(200)
    const gone = await t.json('/photos/2019/cat.png')
    expect(gone).toMatchObject({ status: 404, body: { error: 'Not found' } })
  })
})
