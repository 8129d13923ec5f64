/** `cli block <file>` and `cli import-blocklist <file>` beside a running server, which picks the blocks up. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { uploadForm } from '../fixtures'
import { makeAdmin, registerUser, runCli, startTestServer, type TestServer, userWithKey } from '../helpers'
import { copies, picture } from './pictures'

const scratch = mkdtempSync(join(tmpdir(), 'imghost-block-cli-'))
let t: TestServer

beforeAll(async () => {
  t = await startTestServer()
})
afterAll(async () => {
  await t.stop()
  rmSync(scratch, { recursive: true, force: true })
})

const cli = (...args: string[]) => runCli(args, { ...t.env, PATH: process.env.PATH ?? '' })

async function write(name: string, bytes: Uint8Array | string) {
  const path = join(scratch, name)
  await Bun.write(path, bytes)
  return path
}

async function uploadStatus(bytes: Uint8Array) {
  const who = await userWithKey(t)
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: who.keyHeader,
    body: uploadForm([{ bytes: bytes as Uint8Array<ArrayBuffer>, name: 'a.jpg' }]),
  })
  return res.status
}

describe('cli', () => {
  test('block <file>: the picture and its copies are refused by the running server', async () => {
    const original = await picture(4000)
    const copy = (await copies(original))['resized 70% at quality 70']!
    const run = await cli('block', await write('bad.jpg', original), '--reason', 'received from a hotline')
    expect(run.code).toBe(0)
    expect(run.out).toMatch(/^Blocked .*bad\.jpg as block \d+: perceptual hash [0-9a-f]{16}, SHA-256 [0-9a-f]{64}/)
    expect(await uploadStatus(copy)).toBe(400)
    expect(await uploadStatus(original)).toBe(400)
    expect(await uploadStatus(await picture(4001))).toBe(201)

    const notImage = await cli('block', await write('notes.txt', 'just text'))
    expect([notImage.code, notImage.err]).toEqual([1, expect.stringMatching(/notes\.txt: .*not a supported image/)])
    expect((await cli('block')).code).toBe(2)
  })

  test('import-blocklist <file>: each hash blocked; bad lines reported by number, not fatal (exit 2)', async () => {
    const admin = await registerUser(t)
    await makeAdmin(t, admin.user.id)
    const listed = await picture(5000)
    const hash = await t.server.deps.media.perceptualHash(await write('listed.jpg', listed))
    expect(hash).toMatch(/^[0-9a-f]{16}$/)
    const list = ['# from a partner', '', `0x${hash!.toUpperCase()}`, 'not-a-hash', '0123456789abcdef', '12345'].join(
      '\n',
    )
    const run = await cli('import-blocklist', await write('list.txt', list))
    expect(run.code).toBe(2)
    expect(run.err).toContain('line 4: not a 16-hex-digit hash: not-a-hash')
    expect(run.err).toContain('line 6: not a 16-hex-digit hash: 12345')
    expect(run.out).toContain('2 hashes blocked, 0 already blocked, 2 bad lines skipped')
    expect(await uploadStatus((await copies(listed)).WebP!)).toBe(400)

    // Imported again: nothing new.
    expect((await cli('import-blocklist', await write('list.txt', list))).out).toContain(
      '0 hashes blocked, 2 already blocked',
    )
    const blocks = (await t.json('/api/admin/blocks?limit=100', { headers: admin.bearer })).body.blocks
    expect(
      blocks.filter((b: { source: string }) => b.source === 'import').map((b: { phash: string }) => b.phash),
    ).toEqual(['0123456789abcdef', hash])
  })
})
