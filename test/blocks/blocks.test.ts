/**
 * The perceptual blocklist (src/modules/blocks): copies of a blocked picture are refused on every upload door, 50
 * other pictures are not, lifting a block lets the picture in, hash lists import, and an upload says `duplicateOf`.
 * Every picture is made here (test/blocks/pictures.ts); the distances are printed for the threshold in
 * docs/api.md (Blocked pictures).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { count, eq } from 'drizzle-orm'
import sharp from 'sharp'
import { images } from '../../src/db/schema'
import { hammingDistance } from '../../src/media/phash'
import { uploadForm } from '../fixtures'
import { jsonBody, makeAdmin, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'
import { heifEnc } from '../media/heic-files'
import { copies, picture } from './pictures'

let t: TestServer
let admin: Awaited<ReturnType<typeof registerUser>>
let pictures: ReturnType<typeof Bun.serve>
const served = new Map<string, Uint8Array>()

beforeAll(async () => {
  // URL uploads fetch from a server started here, on loopback.
  t = await startTestServer({
    URL_UPLOAD_ALLOW_PRIVATE: 'true',
    UPLOADS_PER_HOUR: '1000',
    ANON_UPLOADS_PER_WINDOW: '1000',
    REFUSED_UPLOADS_PER_WINDOW: '1000',
  })
  admin = await registerUser(t)
  await makeAdmin(t, admin.user.id)
  pictures = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      const bytes = served.get(new URL(request.url).pathname)
      return bytes ? new Response(bytes as Uint8Array<ArrayBuffer>) : new Response('not here', { status: 404 })
    },
  })
})
afterAll(async () => {
  pictures?.stop(true)
  await t.stop()
})

type Account = Awaited<ReturnType<typeof userWithKey>>
const asAdmin = (path: string, init: RequestInit = {}) =>
  t.json(path, { ...init, headers: { ...admin.bearer, ...(init.headers ?? {}) } })

const TUS = { 'tus-resumable': '1.0.0' }

/** Each upload door, as its clients use it; every one answers the pipeline's status and error. */
const doors: Record<string, (who: Account, bytes: Uint8Array) => Promise<{ status: number; error?: string }>> = {
  'multipart (API key)': async (who, bytes) => {
    const res = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: who.keyHeader,
      body: uploadForm([{ bytes: bytes as Uint8Array<ArrayBuffer>, name: 'a.jpg' }]),
    })
    return { status: res.status, error: res.body.error }
  },
  'anonymous web': async (_who, bytes) => {
    const res = await t.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: bytes as Uint8Array<ArrayBuffer>, name: 'a.jpg' }]),
    })
    return { status: res.status, error: res.body.error }
  },
  'batch (web, signed in), beside a harmless picture': async (who, bytes) => {
    const before = await imageCount()
    const res = await t.json('/api/upload', {
      method: 'POST',
      headers: who.bearer,
      body: uploadForm([
        { bytes: await picture(9000 + before), name: 'fine.jpg' },
        { bytes: bytes as Uint8Array<ArrayBuffer>, name: 'a.jpg' },
      ]),
    })
    // All or nothing: the harmless picture is not stored either.
    expect(await imageCount()).toBe(before)
    return { status: res.status, error: res.body.error }
  },
  'tus (web, signed in)': async (who, bytes) => {
    const created = await t.fetch('/api/tus', {
      method: 'POST',
      headers: { ...TUS, ...who.bearer, 'upload-length': String(bytes.length) },
    })
    expect(created.status).toBe(201)
    const res = await fetch(created.headers.get('location')!, {
      method: 'PATCH',
      headers: { ...TUS, ...who.bearer, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' },
      body: bytes as Uint8Array<ArrayBuffer>,
    })
    return { status: res.status, error: ((await res.json()) as { error?: string }).error }
  },
  'Chevereto /api/1/upload': async (who, bytes) => {
    const body = new FormData()
    body.append('source', new Blob([bytes as Uint8Array<ArrayBuffer>]), 'a.jpg')
    const res = await t.json('/api/1/upload', { method: 'POST', headers: who.keyHeader, body })
    return { status: res.status, error: res.body.error?.message }
  },
  'URL upload': async (who, bytes) => {
    const path = `/p${served.size}.img`
    served.set(path, bytes)
    const body = new FormData()
    body.append('url', `http://127.0.0.1:${pictures.port}${path}`)
    const res = await t.json('/api/v1/upload', { method: 'POST', headers: who.keyHeader, body })
    return { status: res.status, error: res.body.error }
  },
}

async function upload(who: Account, bytes: Uint8Array) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: who.keyHeader,
    body: uploadForm([{ bytes: bytes as Uint8Array<ArrayBuffer>, name: 'a.jpg' }]),
  })
  return res
}

const imageCount = async () => (await t.server.db.select({ n: count() }).from(images))[0].n

const phashOf = async (id: string) =>
  (await t.server.db.select({ phash: images.phash }).from(images).where(eq(images.id, id)))[0]?.phash

const listBlocks = async () => (await asAdmin('/api/admin/blocks?limit=100')).body

describe('a blocked picture stays out', () => {
  test('copies (resized 70% at q70, WebP, PNG, cropped <= 5%, brightened <= 10%) are refused on every door; 50 other pictures pass', async () => {
    const owner = await userWithKey(t)
    const someone = await userWithKey(t)
    const original = await picture(1000)
    const up = await upload(owner, original)
    expect(up.status).toBe(201)
    const blockedHash = (await phashOf(up.body.id))!
    expect(blockedHash).toMatch(/^[0-9a-f]{16}$/)

    const res = await asAdmin(`/api/admin/images/${up.body.id}/block`, {
      method: 'POST',
      ...jsonBody({ reason: 'test: known abuse', keepThumbnail: true }),
    })
    expect(res.status).toBe(200)
    expect(res.body.block).toMatchObject({ phash: blockedHash, source: 'admin', imageId: up.body.id })
    expect(res.body.block.sha256.length).toBeGreaterThanOrEqual(1)
    // The image is gone; its thumbnail was kept with the block, for admins only.
    expect((await t.fetch(`/api/v1/image/${up.body.id}`)).status).toBe(404)
    const thumb = await t.fetch(new URL(res.body.block.thumbnail).pathname, { headers: admin.bearer })
    expect([thumb.status, thumb.headers.get('content-type')]).toEqual([200, 'image/webp'])
    expect((await t.fetch(new URL(res.body.block.thumbnail).pathname)).status).toBe(401)

    const made = await copies(original)
    const distances: Record<string, number> = {}
    const doorNames = Object.keys(doors)
    let i = 0
    for (const [name, bytes] of Object.entries(made)) {
      // Each copy through two doors (in turn), and through the multipart door always.
      for (const door of new Set([doorNames[i++ % doorNames.length]!, doorNames[i % doorNames.length]!])) {
        const answer = await doors[door]!(someone, bytes)
        expect(`${name} via ${door}: ${answer.status} ${answer.error}`).toBe(
          `${name} via ${door}: 400 This image was removed after an abuse report and cannot be uploaded again`,
        )
      }
      distances[name] = hammingDistance(blockedHash, (await t.server.deps.media.perceptualHash(await tmp(bytes)))!)
    }
    console.log('distances of the copies to the blocked picture:', JSON.stringify(distances))
    expect(Math.max(...Object.values(distances))).toBeLessThanOrEqual(t.server.deps.config.blocks.hammingDistance)

    // 50 different pictures: all stored, none near the blocked one.
    const others: string[] = []
    for (let seed = 1; seed <= 50; seed++) {
      const res = await upload(someone, await picture(seed))
      expect(`picture ${seed}: ${res.status}`).toBe(`picture ${seed}: 201`)
      others.push((await phashOf(res.body.id))!)
    }
    const toBlocked = others.map((h) => hammingDistance(blockedHash, h))
    const pairs = others.flatMap((a, i) => others.slice(i + 1).map((b) => hammingDistance(a, b))).sort((a, b) => a - b)
    console.log('distances of 50 other pictures to the blocked picture:', toBlocked.join(' '))
    console.log(`between the 50 (1225 pairs): closest ${pairs.slice(0, 5).join(' ')}, median ${pairs[612]}`)
    expect(Math.min(...toBlocked)).toBeGreaterThan(t.server.deps.config.blocks.hammingDistance)
  })

  test('a report action blocks the picture too; lifting the block lets it in again', async () => {
    const owner = await userWithKey(t)
    const someone = await userWithKey(t)
    const original = await picture(2000)
    const up = await upload(owner, original)
    const report = await t.json('/api/reports', {
      method: 'POST',
      ...jsonBody({ imageId: up.body.id, reason: 'spam' }),
    })
    expect(report.status).toBe(201)
    const acted = await asAdmin(`/api/admin/reports/${report.body.report.id}/action`, {
      method: 'POST',
      ...jsonBody({ deleteImage: true }),
    })
    expect(acted.status).toBe(200)
    const copy = (await copies(original))['resized 70% at quality 70']!
    expect((await doors['anonymous web']!(someone, copy)).status).toBe(400)

    const block = (await listBlocks()).blocks.find((b: { imageId: string }) => b.imageId === up.body.id)
    expect(block).toMatchObject({ source: 'report', reportId: report.body.report.id, thumbnail: null })
    expect((await asAdmin(`/api/admin/blocks/${block.id}`, { method: 'DELETE' })).status).toBe(200)
    expect((await asAdmin(`/api/admin/blocks/${block.id}`, { method: 'DELETE' })).status).toBe(404)
    expect((await listBlocks()).blocks.some((b: { id: number }) => b.id === block.id)).toBe(false)
    // Both the picture (perceptual hash) and the very bytes (SHA-256) are let in again.
    expect((await doors['anonymous web']!(someone, copy)).status).toBe(201)
    expect((await upload(someone, original)).status).toBe(201)
  })

  test('the admin routes: admins only, paged, bad ids refused', async () => {
    const user = await registerUser(t)
    expect((await t.json('/api/admin/blocks', { headers: user.bearer })).status).toBe(403)
    expect((await t.json('/api/admin/blocks')).status).toBe(401)
    expect((await asAdmin('/api/admin/blocks/abc', { method: 'DELETE' })).status).toBe(400)
    expect((await asAdmin('/api/admin/blocks?page=0')).status).toBe(400)
    expect((await asAdmin('/api/admin/images/nothere1/block', { method: 'POST', ...jsonBody({}) })).status).toBe(404)
    const page = await asAdmin('/api/admin/blocks?limit=1')
    expect(page.body).toMatchObject({ success: true, page: 1, limit: 1 })
    expect(page.body.blocks.length).toBeLessThanOrEqual(1)
  })
})

describe('every format is hashed from its decoded pixels', () => {
  test('blocking a JPEG refuses the same picture as HEIC (through heic-decode) and as an animation starting with it', async () => {
    const owner = await userWithKey(t)
    const someone = await userWithKey(t)
    const original = await picture(7000)
    const heic = await heifEnc(sharp(original))
    const frames = [original, await picture(7001)].map((bytes) => sharp(bytes).resize(320, 240).png().toBuffer())
    const animated = new Uint8Array(
      await sharp(await Promise.all(frames), { join: { animated: true } })
        .gif({ delay: 500 })
        .toBuffer(),
    )
    // Stored as they are, each with its hash, before the block.
    for (const bytes of [heic, animated]) {
      const res = await upload(owner, bytes)
      expect(res.status).toBe(201)
      expect(await phashOf(res.body.id)).toMatch(/^[0-9a-f]{16}$/)
    }
    const up = await upload(owner, original)
    expect((await asAdmin(`/api/admin/images/${up.body.id}/block`, { method: 'POST', ...jsonBody({}) })).status).toBe(
      200,
    )
    expect((await doors['multipart (API key)']!(someone, heic)).status).toBe(400)
    expect((await doors['anonymous web']!(someone, animated)).status).toBe(400)
  })

  test('a report action on an image its owner already deleted still blocks the picture (the report kept its hash)', async () => {
    const owner = await userWithKey(t)
    const original = await picture(8000)
    const up = await upload(owner, original)
    const report = await t.json('/api/reports', {
      method: 'POST',
      ...jsonBody({ imageId: up.body.id, reason: 'spam' }),
    })
    await t.json(`/api/v1/image/${up.body.id}`, { method: 'DELETE', headers: owner.keyHeader })
    const acted = await asAdmin(`/api/admin/reports/${report.body.report.id}/action`, {
      method: 'POST',
      ...jsonBody({ deleteImage: true, keepThumbnail: true }),
    })
    expect([acted.status, acted.body.imageDeleted]).toEqual([200, false])
    expect((await doors['multipart (API key)']!(owner, (await copies(original)).WebP!)).status).toBe(400)
  })
})

/** A file holding `bytes`, for hashing outside an upload. */
const scratch = mkdtempSync(join(tmpdir(), 'blocks-test-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let files = 0
async function tmp(bytes: Uint8Array) {
  const path = join(scratch, `f${files++}`)
  await Bun.write(path, bytes)
  return path
}

describe('duplicateOf', () => {
  test('an upload of a picture the account already has says which image; another account, or another picture, does not', async () => {
    const owner = await userWithKey(t)
    const other = await userWithKey(t)
    const original = await picture(3000)
    const first = await upload(owner, original)
    expect(first.status).toBe(201)
    expect(first.body.duplicateOf).toBeUndefined()
    // The same picture as PNG: other bytes, the same perceptual hash.
    const again = await upload(owner, (await copies(original)).PNG!)
    expect([again.status, again.body.duplicateOf]).toEqual([201, first.body.id])
    expect((await upload(other, original)).body.duplicateOf).toBeUndefined()
    expect((await upload(owner, await picture(3001))).body.duplicateOf).toBeUndefined()
    // A deleted image is no duplicate.
    await t.json(`/api/v1/image/${first.body.id}`, { method: 'DELETE', headers: owner.keyHeader })
    expect((await upload(owner, original)).body.duplicateOf).toBe(again.body.id)
  })
})
