import { type DomainError, StorageFull, StorageUnavailable, StorageUnwritable } from '../errors'
import { StorageUnavailableError } from './index'

/** A write to the local disk failed for lack of space or a read-only file system (errno codes only writes give). */
const FULL_ERRNO = new Set(['ENOSPC', 'EDQUOT'])
const UNWRITABLE_ERRNO = new Set(['EROFS'])

/** A fault of the disk or the object store as the domain error it is; null for anything else. */
export function storageFault(error: unknown): DomainError | null {
  for (
    let e = error, depth = 0;
    e && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const errno = String((e as { code?: unknown }).code ?? '')
    if (FULL_ERRNO.has(errno)) return new StorageFull()
    if (UNWRITABLE_ERRNO.has(errno)) return new StorageUnwritable()
  }
  // The object store, once its retries gave up (a local disk's fault in its cause was answered above).
  if (error instanceof StorageUnavailableError) return new StorageUnavailable()
  return null
}
