import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { batchedAppend, WRITE_BATCH_BYTES, writeAll, writeAllv } from '../../src/lib/write-all'

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
    // A vectored write takes the first `most` bytes of its buffers, as a short writev does.
    writev: async (buffers: Uint8Array[]) => {
      const all = Buffer.concat(buffers)
      const n = Math.min(all.length, most, capacity - taken)
      if (n <= 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
      taken += n
      writes.push(n)
      return real.write(all, 0, n, null)
    },
  } as unknown as FileHandle
  const writes: number[] = []
  return { handle, writes, close: () => real.close() }
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

describe('writeAllv and batchedAppend', () => {
  const bytes = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 13) % 251)
  const pieces = (b: Uint8Array, size: number) =>
    Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size))

  test('writeAllv writes every chunk in order through short writes, resuming inside a chunk', async () => {
    const path = join(dir, 'v')
    const { handle, writes, close } = await shortWriting(path, 777)
    await writeAllv(handle, [new Uint8Array(0), ...pieces(bytes, 1000)])
    await close()
    expect(new Uint8Array(readFileSync(path))).toEqual(bytes)
    expect(writes.length).toBe(Math.ceil(bytes.length / 777))
  })

  test("writeAllv throws the disk's error, or EIO for a write that takes nothing", async () => {
    const { handle, close } = await shortWriting(join(dir, 'w'), 1000, 2500)
    await expect(writeAllv(handle, pieces(bytes, 600))).rejects.toMatchObject({ code: 'ENOSPC' })
    await close()
    const stuck = { writev: async () => ({ bytesWritten: 0 }) } as unknown as FileHandle
    await expect(writeAllv(stuck, [bytes])).rejects.toMatchObject({ code: 'EIO' })
  })

  test('batchedAppend writes a batch once it holds a megabyte, and the rest at the end, in order', async () => {
    const big = Uint8Array.from({ length: 2.5 * WRITE_BATCH_BYTES }, (_, i) => (i * 31) % 253)
    const path = join(dir, 'batched')
    const { handle, writes, close } = await shortWriting(path, Number.POSITIVE_INFINITY)
    const file = batchedAppend(Promise.resolve(handle))
    for (const chunk of pieces(big, 64 * 1024)) {
      file.add(chunk)
      await file.written
    }
    expect(writes).toEqual([WRITE_BATCH_BYTES, WRITE_BATCH_BYTES])
    file.end()
    await file.written
    await close()
    expect(writes).toEqual([WRITE_BATCH_BYTES, WRITE_BATCH_BYTES, 0.5 * WRITE_BATCH_BYTES])
    expect(new Uint8Array(readFileSync(path))).toEqual(big)
  })

  test("batchedAppend's written rejects with the disk's error", async () => {
    const { handle, close } = await shortWriting(join(dir, 'full'), WRITE_BATCH_BYTES, WRITE_BATCH_BYTES / 2)
    const file = batchedAppend(Promise.resolve(handle))
    file.add(new Uint8Array(WRITE_BATCH_BYTES))
    await expect(file.written).rejects.toMatchObject({ code: 'ENOSPC' })
    await close()
  })
})
