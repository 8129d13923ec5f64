import type { FileHandle } from 'node:fs/promises'

const stuck = () => Object.assign(new Error('The disk took no bytes of a write'), { code: 'EIO' })

/**
 * Writes all of `bytes` to `handle`, at `position` (or at the file's own position when null). One write can take
 * fewer bytes than it is given (a disk filling up takes what fits) and say so only in its count: the rest is written
 * again, so the error that follows (ENOSPC) is thrown instead of the bytes being silently dropped. Returns only once
 * every byte is written.
 */
export async function writeAll(handle: FileHandle, bytes: Uint8Array, position: number | null = null): Promise<void> {
  for (let at = 0; at < bytes.byteLength; ) {
    const { bytesWritten } = await handle.write(
      bytes,
      at,
      bytes.byteLength - at,
      position === null ? null : position + at,
    )
    if (bytesWritten === 0) throw stuck()
    at += bytesWritten
  }
}

/** Writes all of `chunks`, in order, at the file's own position, in one vectored write (more when one is short). */
export async function writeAllv(handle: FileHandle, chunks: Uint8Array[]): Promise<void> {
  let rest = chunks.filter((c) => c.byteLength > 0)
  while (rest.length > 0) {
    let { bytesWritten } = await handle.writev(rest)
    if (bytesWritten === 0) throw stuck()
    let done = 0
    while (done < rest.length && bytesWritten >= rest[done].byteLength) bytesWritten -= rest[done++].byteLength
    rest = done < rest.length ? [rest[done].subarray(bytesWritten), ...rest.slice(done + 1)] : []
  }
}

/**
 * Bytes gathered before a write: each write is a round trip to the thread pool (~0.1 ms of CPU on this project's
 * machine) and a request body arrives in chunks of 64-256 KB, so one vectored write a megabyte rather than one a chunk
 * took the writing of a 3 MB upload from ~4.5 to ~1.3 ms of CPU (bench/README.md, "Where an upload's time goes").
 */
export const WRITE_BATCH_BYTES = 1 << 20

/**
 * A file filled from a stream's chunks, appended in order in batches of WRITE_BATCH_BYTES (`end` hands over the
 * rest). `written` settles once every batch handed over so far is on disk, or rejects with the disk's error: awaiting
 * it after each chunk keeps at most a batch and a chunk in memory.
 */
export function batchedAppend(handle: Promise<FileHandle>) {
  let pending: Uint8Array[] = []
  let bytes = 0
  let written: Promise<unknown> = handle
  const flush = () => {
    if (bytes === 0) return
    const batch = pending
    pending = []
    bytes = 0
    written = written.then(async () => writeAllv(await handle, batch))
  }
  return {
    add(chunk: Uint8Array) {
      pending.push(chunk)
      bytes += chunk.byteLength
      if (bytes >= WRITE_BATCH_BYTES) flush()
    },
    end: flush,
    get written() {
      return written
    },
  }
}
