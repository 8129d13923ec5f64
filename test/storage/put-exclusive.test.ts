/**
 * An image id collision never overwrites an existing file (issue 17): `put` refuses a key that already holds an
 * object, and the upload pipeline then stores the image under a fresh id, leaving the other object as it was. The
 * collision is arranged by planting an object under the key the pipeline is about to use (ids are random: 1 in 62^8).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { type Storage, StorageKeyTakenError } from '../../src/storage'
import { createConfiguredStorage } from '../../src/storage/configured'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, storageEnv, storedKeys, type TestServer, userWithKey } from '../helpers'

const TIMEOUT = 60_000
const scratch = mkdtempSync(join(tmpdir(), 'imghost-put-'))
const servers: TestServer[] = []
afterAll(async () => {
  for (const t of servers) await t.stop()
  rmSync(scratch, { recursive: true, force: true })
}, TIMEOUT)

const FOREIGN = new TextEncoder().encode('somebody else’s file')
let n = 0
const localFile = (bytes: Uint8Array) => {
  const path = join(scratch, `f${n++}`)
  writeFileSync(path, bytes)
  return path
}
const read = async (storage: Storage, key: string) => new Uint8Array(await storage.file(key).arrayBuffer())

/** A storage whose first put under `prefix` finds the key already taken: a foreign object is put there just before. */
function colliding(inner: Storage, prefix: 'originals/' | 'thumbs/') {
  const taken: string[] = []
  const storage: Storage = {
    ...inner,
    async put(key, path, opts) {
      if (taken.length === 0 && key.startsWith(prefix)) {
        taken.push(key)
        await inner.put(key, localFile(FOREIGN))
      }
      return inner.put(key, path, opts)
    },
  }
  return { storage, taken }
}

async function serverWith(prefix: 'originals/' | 'thumbs/') {
  const dataDir = mkdtempSync(join(tmpdir(), 'imghost-put-data-'))
  const env = { DATA_DIR: dataDir, ...storageEnv() }
  const { storage, taken } = colliding(createConfiguredStorage(loadConfig(env)), prefix)
  const t = await startTestServer(env, { storage })
  servers.push(t)
  return { t, taken }
}

describe('storage.put never replaces', () => {
  test(
    'a taken key is refused with StorageKeyTakenError and keeps its bytes; replace (restore) is explicit',
    async () => {
      const t = await startTestServer()
      servers.push(t)
      const storage = t.server.deps.storage
      const key = 'originals/TakenKey.png'
      await storage.put(key, localFile(FOREIGN))
      const error = await storage.put(key, localFile(new Uint8Array([1, 2, 3]))).catch((e) => e)
      expect(error).toBeInstanceOf(StorageKeyTakenError)
      expect(await read(storage, key)).toEqual(FOREIGN)
      await storage.put(key, localFile(new Uint8Array([4, 5, 6])), { replace: true })
      expect(await read(storage, key)).toEqual(new Uint8Array([4, 5, 6]))
    },
    TIMEOUT,
  )

  for (const prefix of ['originals/', 'thumbs/'] as const) {
    test(
      `an upload whose ${prefix.slice(0, -1)} key is taken is stored under a fresh id; the other file is untouched`,
      async () => {
        const { t, taken } = await serverWith(prefix)
        const owner = await userWithKey(t)
        const bytes = await makeImage('png', 40, 30, 2)
        const up = await t.json('/api/v1/upload', {
          method: 'POST',
          headers: owner.keyHeader,
          body: uploadForm([{ bytes, name: 'collide.png' }]),
        })
        expect(up.status).toBe(201)
        expect(taken).toHaveLength(1)
        const takenId = taken[0].slice(prefix.length, prefix.length + 8)
        expect(up.body.id).not.toBe(takenId)
        // The foreign object is as it was, and nothing else of the abandoned id is left (its original, when only the
        // thumbnail's name was taken, went again).
        expect(await read(t.server.deps.storage, taken[0])).toEqual(FOREIGN)
        expect(await storedKeys(t)).toEqual(
          [taken[0], `originals/${up.body.id}.png`, `thumbs/${up.body.id}.webp`].sort(),
        )
        expect(new Uint8Array(await (await t.fetch(`/cdn/${up.body.id}.png`)).arrayBuffer())).toEqual(bytes)
        expect((await t.fetch(`/cdn/${takenId}.png`)).status).toBe(404)
      },
      TIMEOUT,
    )
  }
})
