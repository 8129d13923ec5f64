import type { FileHandle } from 'node:fs/promises'

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
    if (bytesWritten === 0) throw Object.assign(new Error('The disk took no bytes of a write'), { code: 'EIO' })
    at += bytesWritten
  }
}
