/**
 * Accounts that can leave (issue 37, point 6): GET /api/account/export streams a zip that Info-ZIP's `unzip` reads,
 * DELETE /api/account and DELETE /api/admin/users/:id delete an account with everything it made. Run on local disk, S3
 * (`bun test/run-s3.ts`) and PostgreSQL (`bun test/run-pg.ts`); the counters are judged by `cli check` run as a process
 * on the stopped server's data.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { apiKeys, users } from '../../src/db/schema'
import { type Bytes, makeImage, uploadForm } from '../fixtures'
import {
  dropDatabase,
  eventually,
  jsonBody,
  makeAdmin,
  registerUser,
  runCli,
  startTestServer,
  storedKeys,
  type TestServer,
  userWithKey,
} from '../helpers'

const TIMEOUT = 120_000
let t: TestServer
const scratch = mkdtempSync(join(tmpdir(), 'leave-test-'))

beforeAll(async () => {
  // Webhooks to a closed local port: made (and exported, and deleted), never delivered.
  t = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: 'true' })
}, TIMEOUT)
afterAll(async () => {
  await t?.server.stop().catch(() => {})
  rmSync(t.dataDir, { recursive: true, force: true })
  await dropDatabase(t.env)
  rmSync(scratch, { recursive: true, force: true })
}, TIMEOUT)

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
type Account = Awaited<ReturnType<typeof userWithKey>>

/** Uploads `files` with the account's key into `album`; returns the answers' images with the bytes sent. */
async function upload(account: Account, files: Bytes[], album = 'Holidays') {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: account.keyHeader,
    body: uploadForm(
      files.map((bytes, i) => ({ bytes, name: `photo ${i}.png` })),
      { album },
    ),
  })
  expect(res.status).toBe(201)
  // One file answers a flat object, several a list (INTERFACE.md).
  const answered = files.length === 1 ? [res.body] : res.body.images
  return (answered as { id: string; url: string; viewer: string; thumbnail: string }[]).map((image, i) => ({
    ...image,
    sent: files[i]!,
  }))
}

/** An account with a key, images in an album, an embed profile and a webhook. */
async function populated() {
  const account = await userWithKey(t)
  const images = await upload(account, [await makeImage('png', 20, 14), await makeImage('jpeg', 16, 12)])
  const embed = await t.json('/api/embeds', { method: 'POST', ...jsonBody({ name: 'Work' }, account.bearer) })
  expect(embed.status).toBe(201)
  const hook = await t.json('/api/webhooks', {
    method: 'POST',
    ...jsonBody({ url: 'http://127.0.0.1:9/hook', events: ['image.uploaded'] }, account.bearer),
  })
  expect(hook.status).toBe(201)
  return { ...account, images, webhookSecret: hook.body.secret as string }
}

/** Downloads the account's export to a file; the answer's headers and the path. */
async function exportOf(bearer: Record<string, string>) {
  const res = await t.fetch('/api/account/export', { headers: bearer })
  const path = join(scratch, `${crypto.randomUUID()}.zip`)
  if (res.status === 200) await Bun.write(path, res)
  return { res, path }
}

function unzip(...args: string[]) {
  const run = Bun.spawnSync(['unzip', ...args])
  return { code: run.exitCode, out: run.stdout.toString(), bytes: new Uint8Array(run.stdout) }
}

/** Every link of an image answers 404: its metadata, its file, its viewer page. */
async function expectGone(image: { id: string; url: string; viewer: string }) {
  expect((await t.fetch(`/api/v1/image/${image.id}`)).status).toBe(404)
  expect((await fetch(image.url)).status).toBe(404)
  expect((await fetch(image.viewer)).status).toBe(404)
}

describe('GET /api/account/export', () => {
  test(
    'a zip unzip reads: the four JSON files and every original, byte for byte; no secret, no other account',
    async () => {
      const owner = await populated()
      const other = await populated()
      // Two-factor on, so its secret exists to be looked for.
      const setup = await t.json('/api/auth/totp/setup', { method: 'POST', headers: owner.bearer })
      const code = new TOTP({ secret: Secret.fromBase32(setup.body.secret), digits: 6, period: 30 }).generate()
      const enabled = await t.json('/api/auth/totp/enable', { method: 'POST', ...jsonBody({ code }, owner.bearer) })
      expect(enabled.status).toBe(200)

      const { res, path } = await exportOf(owner.bearer)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('application/zip')
      expect(res.headers.get('content-disposition')).toMatch(
        new RegExp(`^attachment; filename="${owner.user.username}-export-\\d{4}-\\d{2}-\\d{2}\\.zip"$`),
      )
      const tested = unzip('-t', path)
      expect(tested.code).toBe(0)
      expect(tested.out).toContain('No errors detected')
      const names = unzip('-Z1', path).out.trim().split('\n').sort()
      const originals = owner.images.map((image) => `images/${image.id}.${image.url.split('.').pop()}`)
      expect(names).toEqual(['account.json', 'albums.json', 'embeds.json', 'images.json', ...originals].sort())

      // The originals are what the store holds (served at their direct links), and the upload's bytes as sent.
      const listed = JSON.parse(unzip('-p', path, 'images.json').out) as { id: string; sha256: string; file: string }[]
      expect(listed.map((image) => image.id).sort()).toEqual(owner.images.map((image) => image.id).sort())
      for (const image of owner.images) {
        const file = `images/${image.id}.${image.url.split('.').pop()}`
        const stored = new Uint8Array(await (await fetch(image.url)).arrayBuffer())
        expect(sha256(unzip('-p', path, file).bytes)).toBe(sha256(stored))
        const entry = listed.find((item) => item.id === image.id)!
        expect(entry.file).toBe(file)
        expect(entry.sha256).toBe(sha256(image.sent))
      }

      const albums = JSON.parse(unzip('-p', path, 'albums.json').out)
      expect(albums).toHaveLength(1)
      expect(albums[0].title).toBe('Holidays')
      expect(albums[0].imageIds.sort()).toEqual(owner.images.map((image) => image.id).sort())
      const embeds = JSON.parse(unzip('-p', path, 'embeds.json').out)
      expect(embeds.map((profile: { name: string }) => profile.name)).toEqual(['Work'])
      const account = JSON.parse(unzip('-p', path, 'account.json').out)
      expect(account.user.username).toBe(owner.user.username)
      expect(account.twoFactor.enabled).toBe(true)
      expect(account.apiKeys).toHaveLength(1)
      expect(account.webhooks.map((hook: { url: string }) => hook.url)).toEqual(['http://127.0.0.1:9/hook'])

      // No secret, in any of the four files.
      const db = t.server.deps.db
      const [row] = await db.select().from(users).where(eq(users.id, owner.user.id))
      const [key] = await db.select().from(apiKeys).where(eq(apiKeys.userId, owner.user.id))
      const text = ['account.json', 'images.json', 'albums.json', 'embeds.json']
        .map((name) => unzip('-p', path, name).out)
        .join('\n')
      for (const secret of [
        row!.passwordHash,
        '$argon2id$',
        key!.secretHash,
        key!.secretHash.slice(0, 16),
        owner.apiKey,
        setup.body.secret,
        owner.webhookSecret,
        owner.password,
      ])
        expect(text).not.toContain(secret)

      // Another account's images appear nowhere.
      for (const image of other.images) {
        expect(text).not.toContain(image.id)
        expect(names.join('\n')).not.toContain(image.id)
      }
    },
    TIMEOUT,
  )

  test('without a session: 401; with an API key instead: 401', async () => {
    expect((await t.fetch('/api/account/export')).status).toBe(401)
    const account = await userWithKey(t)
    const res = await t.json('/api/account/export', { headers: account.keyHeader })
    expect(res.status).toBe(401)
    expect(typeof res.body.error).toBe('string')
  })

  test('an account with nothing: the four JSON files, empty lists', async () => {
    const account = await registerUser(t)
    const { res, path } = await exportOf(account.bearer)
    expect(res.status).toBe(200)
    expect(unzip('-t', path).code).toBe(0)
    expect(unzip('-Z1', path).out.trim().split('\n').sort()).toEqual([
      'account.json',
      'albums.json',
      'embeds.json',
      'images.json',
    ])
    expect(JSON.parse(unzip('-p', path, 'images.json').out)).toEqual([])
  })
})

const deleteAccount = (bearer: Record<string, string>, body: unknown) =>
  t.json('/api/account', { method: 'DELETE', ...jsonBody(body, bearer) })

describe('DELETE /api/account', () => {
  test('a wrong password: 403 and nothing deleted; no confirmation at all: 400', async () => {
    const account = await populated()
    const wrong = await deleteAccount(account.bearer, { password: 'not the password' })
    expect(wrong.status).toBe(403)
    expect(typeof wrong.body.error).toBe('string')
    expect((await deleteAccount(account.bearer, {})).status).toBe(400)
    expect((await t.json('/api/auth/me', { headers: account.bearer })).status).toBe(200)
    expect((await t.fetch(`/api/v1/image/${account.images[0]!.id}`)).status).toBe(200)
    expect((await fetch(account.images[0]!.url)).status).toBe(200)
  })

  test('with a two-factor code instead of the password: a wrong one is 403, a current one deletes', async () => {
    const account = await userWithKey(t)
    const [image] = await upload(account, [await makeImage('png', 10, 10)])
    const setup = await t.json('/api/auth/totp/setup', { method: 'POST', headers: account.bearer })
    const totp = new TOTP({ secret: Secret.fromBase32(setup.body.secret), digits: 6, period: 30 })
    const enabled = await t.json('/api/auth/totp/enable', {
      method: 'POST',
      ...jsonBody({ code: totp.generate() }, account.bearer),
    })
    const recovery = enabled.body.recoveryCodes as string[]
    expect((await deleteAccount(account.bearer, { code: '000000' })).status).toBe(403)
    expect((await t.fetch(`/api/v1/image/${image!.id}`)).status).toBe(200)
    // A recovery code confirms too (the current step's code was used up by the enabling).
    expect((await deleteAccount(account.bearer, { code: recovery[0] })).status).toBe(200)
    await expectGone(image!)
  })

  test('passkey options for an account without a passkey: 400', async () => {
    const account = await registerUser(t)
    const res = await t.json('/api/account/delete/options', { method: 'POST', headers: account.bearer })
    expect(res.status).toBe(400)
    expect(res.body.error).toContain('no passkey')
  })

  test('the last admin cannot leave (409, nothing deleted); once another admin exists, it can', async () => {
    const admin = await registerUser(t)
    await makeAdmin(t, admin.user.id)
    // Other admins made by other tests would let it go: every other admin is demoted first.
    const db = t.server.deps.db
    for (const other of await db.select().from(users).where(eq(users.role, 'admin')))
      if (other.id !== admin.user.id) await t.server.services.admin.updateUser(other.id, { role: 'user' })
    const refused = await deleteAccount(admin.bearer, { password: admin.password })
    expect(refused.status).toBe(409)
    expect(refused.body.error).toContain('last admin')
    expect((await t.json('/api/auth/me', { headers: admin.bearer })).status).toBe(200)

    const second = await registerUser(t)
    await makeAdmin(t, second.user.id)
    expect((await deleteAccount(admin.bearer, { password: admin.password })).status).toBe(200)
    expect((await t.json('/api/auth/me', { headers: second.bearer })).status).toBe(200)
  })
})

describe('DELETE /api/admin/users/:id', () => {
  test('an admin deletes another account; an unknown id is 404, its own 409, a non-admin 403', async () => {
    const admin = await registerUser(t)
    await makeAdmin(t, admin.user.id)
    const target = await populated()
    const bystander = await populated()
    const remove = (id: number, bearer = admin.bearer) =>
      t.json(`/api/admin/users/${id}`, { method: 'DELETE', headers: bearer })

    expect((await remove(target.user.id, bystander.bearer)).status).toBe(403)
    expect((await remove(999_999)).status).toBe(404)
    expect((await remove(admin.user.id)).status).toBe(409)

    const done = await remove(target.user.id)
    expect(done.status).toBe(200)
    expect(done.body).toEqual({ success: true })
    expect((await t.json('/api/auth/me', { headers: target.bearer })).status).toBe(401)
    expect((await t.json('/api/v1/me', { headers: target.keyHeader })).status).toBe(401)
    for (const image of target.images) await expectGone(image)
    for (const image of bystander.images) expect((await fetch(image.url)).status).toBe(200)
    // Gone from the admin's list too.
    const listed = await t.json(`/api/admin/users?q=${target.user.username}`, { headers: admin.bearer })
    expect(listed.body.total).toBe(0)
  })
})

describe('a deleted account, as a whole', () => {
  test(
    'everything it made is gone at once, another account is untouched, and cli check finds the counters true',
    async () => {
      const leaving = await populated()
      const staying = await populated()
      // A size made on first request (a variant: the small preset), so its removal is checked too.
      for (const image of leaving.images)
        expect((await fetch(image.thumbnail.replace('/cdn/medium/', '/cdn/small/'))).status).toBe(200)
      const ids = leaving.images.map((image) => image.id)
      const made = (await storedKeys(t)).filter((key) => ids.some((id) => key.includes(id)))
      expect(made.filter((key) => key.startsWith('variants/'))).toHaveLength(ids.length)
      const stayingMe = await t.json('/api/v1/me', { headers: staying.keyHeader })

      const res = await deleteAccount(leaving.bearer, { password: leaving.password })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ success: true })

      // Its links, its tokens and its key, at once.
      for (const image of leaving.images) await expectGone(image)
      expect((await t.json('/api/auth/me', { headers: leaving.bearer })).status).toBe(401)
      expect((await t.json('/api/v1/me', { headers: leaving.keyHeader })).status).toBe(401)
      const login = await t.json('/api/auth/login', {
        method: 'POST',
        ...jsonBody({ username: leaving.user.username, password: leaving.password }),
      })
      expect(login.status).toBe(401)
      for (const image of leaving.images)
        expect((await fetch(image.thumbnail.replace('/cdn/medium/', '/cdn/small/'))).status).toBe(404)
      // Every file of its images left the store: originals and thumbnails with the rows, variants just after (the
      // image event's work, scheduled by the deletion).
      const left = async () => (await storedKeys(t)).filter((key) => ids.some((id) => key.includes(id)))
      expect((await left()).filter((key) => !key.startsWith('variants/'))).toEqual([])
      await eventually(async () => (await left()).length === 0, 30_000, 'the variants removed')
      // Its profile page is gone; the other account sees what it saw.
      expect((await t.fetch(`/api/users/${leaving.user.username}`)).status).toBe(404)
      expect((await t.json('/api/v1/me', { headers: staying.keyHeader })).body).toEqual(stayingMe.body)
      for (const image of staying.images) expect((await fetch(image.url)).status).toBe(200)
      // Its username is free again.
      const again = await t.json('/api/auth/register', {
        method: 'POST',
        ...jsonBody({ username: leaving.user.username, email: leaving.user.email, password: 'another password' }),
      })
      expect(again.status).toBe(201)

      // The operator's check, on the stopped server's data: every counter equals a recount, no stray file.
      await t.server.stop()
      const check = await runCli(['check'], t.env)
      expect(check.err).toBe('')
      expect(check.code).toBe(0)
    },
    TIMEOUT,
  )
})
