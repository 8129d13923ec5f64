import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { apiKeys, users } from '../../src/db/schema'
import { Unauthorized } from '../../src/errors'
import { httpErrorOf } from '../../src/http/errors'
import { tableNames, tableRows } from '../db-dump'
import { jsonBody, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

const createKey = (bearer: Record<string, string>, name: string) =>
  t.json('/api/keys', { method: 'POST', ...jsonBody({ name }, bearer) })
const listKeys = (bearer: Record<string, string>) => t.fetch('/api/keys', { headers: bearer })
const usage = (key: string) => t.json('/api/v1/me', { headers: { 'x-api-key': key } })
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

/** Every text (or blob) value of every row of every table, for searching the database for a secret. */
async function allStoredValues(t: TestServer): Promise<{ table: string; column: string; value: string }[]> {
  const out: { table: string; column: string; value: string }[] = []
  for (const name of await tableNames(t.server.db)) {
    for (const row of await tableRows(t.server.db, name)) {
      for (const [column, value] of Object.entries(row)) {
        if (typeof value === 'string') out.push({ table: name, column, value })
        else if (value instanceof Uint8Array)
          out.push({ table: name, column, value: Buffer.from(value).toString('latin1') })
      }
    }
  }
  return out
}

describe('POST /api/keys', () => {
  test('201 { success, key, apiKey }: the secret is long, random and prefixed as shown', async () => {
    const account = await registerUser(t)
    const res = await createKey(account.bearer, 'laptop')
    expect(res.status).toBe(201)
    expect(Object.keys(res.body).sort()).toEqual(['apiKey', 'key', 'success'])
    expect(res.body.success).toBe(true)
    const { key, apiKey } = res.body
    expect(Object.keys(key).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'prefix'])
    expect(Number.isInteger(key.id) && key.id > 0).toBe(true)
    expect(key.name).toBe('laptop')
    expect(key.createdAt).toMatch(ISO_MS)
    expect(key.lastUsedAt).toBeNull()
    expect(typeof apiKey).toBe('string')
    expect(apiKey.length).toBeGreaterThanOrEqual(32)
    expect(key.prefix).toBe(apiKey.slice(0, 8))

    const second = await createKey(account.bearer, 'laptop')
    expect(second.status).toBe(201)
    expect(second.body.apiKey).not.toBe(apiKey)
    expect(second.body.key.id).not.toBe(key.id)
  })

  test('a name is required (1-100 characters); no session: 401', async () => {
    const account = await registerUser(t)
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 42 }]) {
      const res = await t.json('/api/keys', { method: 'POST', ...jsonBody(body, account.bearer) })
      expect({ body, status: res.status }).toEqual({ body, status: 400 })
      expect(typeof res.body.error).toBe('string')
    }
    const anon = await t.json('/api/keys', { method: 'POST', ...jsonBody({ name: 'x' }) })
    expect(anon.status).toBe(401)
    expect(typeof anon.body.error).toBe('string')
  })
})

describe('GET /api/keys', () => {
  test("lists only the caller's keys, newest first, and never the secret or its hash", async () => {
    const alice = await userWithKey(t)
    const bob = await userWithKey(t)
    const extra = await createKey(alice.bearer, 'second')
    const res = await listKeys(alice.bearer)
    expect(res.status).toBe(200)
    const text = await res.text()
    for (const secret of [alice.apiKey, extra.body.apiKey]) {
      expect(text).not.toContain(secret)
      expect(text).not.toContain(secret.slice(8))
      expect(text).not.toContain(sha256(secret))
    }
    const body = JSON.parse(text)
    expect(body.success).toBe(true)
    expect(body.keys.map((k: any) => k.name)).toEqual(['second', 'test'])
    expect(body.keys[0]).toEqual(extra.body.key)
    expect(body.keys[1].prefix).toBe(alice.apiKey.slice(0, 8))
    for (const key of body.keys)
      expect(Object.keys(key).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'prefix'])
    // Bob's key is not in Alice's list.
    expect(text).not.toContain(bob.apiKey.slice(0, 8))
  })

  test('no session: 401', async () => {
    const res = await t.json('/api/keys')
    expect(res.status).toBe(401)
    expect(typeof res.body.error).toBe('string')
  })
})

describe('secret storage', () => {
  test('the key secret is never stored in clear; its SHA-256 hex is', async () => {
    const account = await userWithKey(t)
    const values = await allStoredValues(t)
    const leaks = values.filter((v) => v.value.includes(account.apiKey) || v.value.includes(account.apiKey.slice(8)))
    expect(leaks).toEqual([])

    const rows = await t.server.db.select().from(apiKeys).where(eq(apiKeys.userId, account.user.id))
    expect(rows.length).toBe(1)
    const row = rows[0] as Record<string, unknown>
    for (const column of Object.keys(row)) expect(String(row[column] ?? '')).not.toContain(account.apiKey)
    expect(row.secretHash).toBe(sha256(account.apiKey))
    expect(row.prefix).toBe(account.apiKey.slice(0, 8))
  })

  test('passwords are stored as argon2id hashes', async () => {
    const account = await registerUser(t)
    const [row] = await t.server.db
      .select({ passwordHash: users.passwordHash })
      .from(users)
      .where(eq(users.id, account.user.id))
    expect(row.passwordHash).toStartWith('$argon2id$')
    expect((await allStoredValues(t)).filter((v) => v.value.includes(account.password))).toEqual([])
  })
})

describe('key authentication (X-API-Key on GET /api/v1/me)', () => {
  test('a key authenticates as its owner and updates lastUsedAt', async () => {
    const account = await userWithKey(t)
    const before = (await (await listKeys(account.bearer)).json()) as any
    expect(before.keys[0].lastUsedAt).toBeNull()

    const started = Date.now()
    const res = await usage(account.apiKey)
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.username).toBe(account.user.username)
    expect(res.body.email).toBe(account.user.email)

    const after = (await (await listKeys(account.bearer)).json()) as any
    expect(after.keys[0].lastUsedAt).toMatch(ISO_MS)
    expect(Date.parse(after.keys[0].lastUsedAt)).toBeGreaterThanOrEqual(started - 1000)
    expect(Date.parse(after.keys[0].lastUsedAt)).toBeLessThanOrEqual(Date.now() + 1000)
  })

  test('the service resolves a secret to its owner and refuses others', async () => {
    const account = await userWithKey(t)
    expect((await t.server.services.auth.keyUser(account.apiKey)).id).toBe(account.user.id)
    let caught: unknown
    try {
      await t.server.services.auth.keyUser(account.apiKey.slice(0, -1) + (account.apiKey.endsWith('A') ? 'B' : 'A'))
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(Unauthorized)
    expect(httpErrorOf(caught as Unauthorized)?.status).toBe(401)
  })

  test('missing, wrong, truncated or JWT-as-key credentials: 401', async () => {
    const account = await userWithKey(t)
    const none = await t.json('/api/v1/me')
    expect(none.status).toBe(401)
    expect(typeof none.body.error).toBe('string')
    const flipped = account.apiKey.slice(0, -1) + (account.apiKey.endsWith('A') ? 'B' : 'A')
    for (const key of [
      flipped,
      account.apiKey.slice(0, -1),
      account.apiKey.slice(0, 8),
      'garbage',
      account.token,
      account.apiKey.toUpperCase(),
    ]) {
      if (key === account.apiKey) continue
      const res = await usage(key)
      expect({ key, status: res.status }).toEqual({ key, status: 401 })
      expect(typeof res.body.error).toBe('string')
    }
    // A key is not a bearer token, nor the other way round.
    expect((await t.json('/api/v1/me', { headers: { authorization: `Bearer ${account.apiKey}` } })).status).toBe(401)
    expect((await t.json('/api/auth/me', { headers: { authorization: `Bearer ${account.apiKey}` } })).status).toBe(401)
  })
})

describe('DELETE /api/keys/:id', () => {
  test('revoking a key stops it at once; the other keys keep working', async () => {
    const account = await userWithKey(t)
    const spare = await createKey(account.bearer, 'spare')
    expect((await usage(account.apiKey)).status).toBe(200)
    const keys = ((await (await listKeys(account.bearer)).json()) as any).keys as { id: number; name: string }[]
    const id = keys.find((k) => k.name === 'test')!.id

    const res = await t.json(`/api/keys/${id}`, { method: 'DELETE', headers: account.bearer })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    const gone = await usage(account.apiKey)
    expect(gone.status).toBe(401)
    expect(typeof gone.body.error).toBe('string')
    expect((await usage(spare.body.apiKey)).status).toBe(200)
    const left = ((await (await listKeys(account.bearer)).json()) as any).keys as { id: number }[]
    expect(left.map((k) => k.id)).toEqual([spare.body.key.id])

    // Deleting it again: 404.
    expect((await t.json(`/api/keys/${id}`, { method: 'DELETE', headers: account.bearer })).status).toBe(404)
  })

  test("another user's key: 404 and it keeps working; unknown id: 404; no session: 401", async () => {
    const alice = await userWithKey(t)
    const mallory = await userWithKey(t)
    const aliceKeyId = (((await (await listKeys(alice.bearer)).json()) as any).keys as { id: number }[])[0].id

    const res = await t.json(`/api/keys/${aliceKeyId}`, { method: 'DELETE', headers: mallory.bearer })
    expect(res.status).toBe(404)
    expect(typeof res.body.error).toBe('string')
    expect((await usage(alice.apiKey)).status).toBe(200)

    expect((await t.json('/api/keys/99999999', { method: 'DELETE', headers: alice.bearer })).status).toBe(404)
    const anon = await t.json(`/api/keys/${aliceKeyId}`, { method: 'DELETE' })
    expect(anon.status).toBe(401)
    expect((await usage(alice.apiKey)).status).toBe(200)
  })
})
