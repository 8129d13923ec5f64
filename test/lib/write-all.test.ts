import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeAll } from '../../src/lib/write-all'

const dir = mkdtempSync(join(tmpdir(), 'imghost-writeall-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * A real file's handle whose writes take at most `most` bytes each, as a disk filling up does (a short write says so
 * only in its count), and fail with ENOSPC once `capacity` bytes were taken.
 */
async function shortWriting(path: string, most: number, capacity = Number.POSITIVE_INFINITY) {
  const real = await open(path, 'w+')
  let taken = 0
  const handle = {
    write: async (bytes: Uint8Array, offset: number, length: number, position: number | null) => {
      const n = Math.min(length, most, capacity - taken)
      if (n <= 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
      taken += n
      return real.write(bytes, offset, n, position)
    },
  } as unknown as FileHandle
  return { handle, close: () => real.close() }
}

describe('writeAll', () => {
  const bytes = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 7) % 256)

  test('writes every byte through short writes, at the file position or at a given one', async () => {
    const path = join(dir, 'a')
    const { handle, close } = await shortWriting(path, 333)
    await writeAll(handle, bytes.subarray(0, 4000))
    await writeAll(handle, bytes.subarray(4000))
    await writeAll(handle, bytes.subarray(0, 10), 20_000)
    await close()
    const written = new Uint8Array(readFileSync(path))
    expect(written.subarray(0, 10_000)).toEqual(bytes)
    expect(written.subarray(20_000)).toEqual(bytes.subarray(0, 10))
  })

  test("throws the disk's error once it takes no more, instead of dropping the rest", async () => {
    const { handle, close } = await shortWriting(join(dir, 'b'), 1000, 2500)
    await expect(writeAll(handle, bytes)).rejects.toMatchObject({ code: 'ENOSPC' })
    await close()
  })

  test('a write that takes nothing and says nothing fails (no endless loop)', async () => {
    const stuck = { write: async () => ({ bytesWritten: 0 }) } as unknown as FileHandle
    await expect(writeAll(stuck, bytes)).rejects.toMatchObject({ code: 'EIO' })
  })
})
