/**
 * The tar writer of backups (src/ops/tar.ts), judged by GNU tar: what it extracts is byte for byte what was added, at
 * every size around the 512-byte blocks, under the names given; a file whose size is not what it said is refused.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tarWriter } from '../../src/ops/tar'

const scratch = mkdtempSync(join(tmpdir(), 'imghost-tar-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const fileOf = (bytes: Uint8Array<ArrayBuffer>, lastModified = Date.UTC(2026, 0, 2)) => {
  const blob = new Blob([bytes])
  return { size: bytes.length, lastModified, stream: () => blob.stream() }
}

test('GNU tar extracts every file as it was added', async () => {
  const files: [string, Uint8Array<ArrayBuffer>][] = [
    ['imghost.sqlite', crypto.getRandomValues(new Uint8Array(4096))],
    ['files/originals/AbCdEf12.png', crypto.getRandomValues(new Uint8Array(511))],
    ['files/thumbs/AbCdEf12.webp', crypto.getRandomValues(new Uint8Array(512))],
    ['files/originals/Zz9Yy8Xx.jpg', crypto.getRandomValues(new Uint8Array(513))],
    ['empty', new Uint8Array(0)],
    // Larger than the writer's buffer, in many chunks.
    ['files/originals/Big12345.tiff', new Uint8Array(3 * 1024 * 1024 + 7).map((_, i) => i * 31)],
  ]
  const archive = join(scratch, 'backup.tar')
  const tar = tarWriter(archive)
  for (const [name, bytes] of files) await tar.add(name, fileOf(bytes))
  await tar.end()

  const listed = Bun.spawnSync(['tar', '-tvf', archive]).stdout.toString().trim().split('\n')
  expect(listed.map((line) => line.split(/\s+/).at(-1))).toEqual(files.map(([name]) => name))
  expect(listed.map((line) => Number(line.split(/\s+/)[2]))).toEqual(files.map(([, bytes]) => bytes.length))
  expect(listed[0]).toContain('2026-01-02')

  const out = join(scratch, 'out')
  Bun.spawnSync(['mkdir', '-p', out])
  const extracted = Bun.spawnSync(['tar', '-xf', archive, '-C', out])
  expect(extracted.exitCode, extracted.stderr.toString()).toBe(0)
  for (const [name, bytes] of files) expect(new Uint8Array(readFileSync(join(out, name)))).toEqual(bytes)
})

test('a file shorter or longer than its stated size is refused', async () => {
  for (const actual of [100, 300]) {
    const tar = tarWriter(join(scratch, `bad-${actual}.tar`))
    const blob = new Blob([new Uint8Array(actual)])
    await expect(tar.add('changed', { size: 200, lastModified: 0, stream: () => blob.stream() })).rejects.toThrow(
      'changed while it was archived',
    )
  }
})
