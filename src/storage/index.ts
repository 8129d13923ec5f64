import { formatFromExt } from '../media/formats'

/** A lazily read stored object: Bun.file locally, an S3 file in a bucket; both stream and slice without buffering. */
export type StoredFile = Blob & { exists(): Promise<boolean> }

/** Where a stored object lives: the original, its thumbnail or one of its variants, named only by a validated image id. */
export type StorageKey = string

/**
 * A key: a folder of the store, a name of letters and digits only (no dot, slash or traversal can hide in it) and an
 * image format's extension. Which names are valid ids is the caller's rule, not the store's.
 */
const KEY_PATTERN = /^(originals|thumbs|variants)\/[A-Za-z0-9]+\.([a-z0-9]+)$/

export const originalKey = (id: string, ext: string): StorageKey => checkKey(`originals/${id}.${ext}`)
export const thumbnailKey = (id: string): StorageKey => checkKey(`thumbs/${id}.webp`)
/** A resized copy (src/modules/variants): `name` says whose and which, in letters and digits. */
export const variantKey = (name: string, ext: string): StorageKey => checkKey(`variants/${name}.${ext}`)

/** Keys reach the file system or a bucket only after this check, so no request can name another path. */
export function checkKey(key: string): StorageKey {
  const ext = KEY_PATTERN.exec(key)?.[2]
  if (!ext || !formatFromExt(ext)) throw new Error(`invalid storage key: ${key}`)
  return key
}

/**
 * Image bytes behind one interface, so the local disk can be swapped for an object store without touching the modules.
 * `file` returns a lazily-read Blob (Bun.file or an S3 file) that responses stream and slice for ranges.
 */
export interface Storage {
  /**
   * Stores a finished local file under `key` (the local file stays: the caller removes it); atomic: readers see the
   * whole file or nothing. A key that already holds an object is never replaced (StorageKeyTakenError), unless
   * `replace` says so (a restore).
   */
  put(key: StorageKey, localPath: string, opts?: { replace?: boolean }): Promise<void>
  file(key: StorageKey): StoredFile
  /** Size, and when it was last written (ms since the epoch: the sweep spares young objects); null when absent. */
  stat(key: StorageKey): Promise<{ size: number; modifiedAt: number } | null>
  exists(key: StorageKey): Promise<boolean>
  delete(key: StorageKey): Promise<void>
  /**
   * Whether the store can serve now, for /healthz: one cheap request (a list of one key in a bucket, an access check of
   * the files directories on disk), no retries, bounded in time; throws StorageUnavailableError saying what failed.
   */
  probe(): Promise<void>
  /** Every stored key, for the startup sweep and integrity checks. */
  list(): AsyncIterable<StorageKey>
  /**
   * Starts reading `file` (or a slice of it, `length` bytes) and returns it as a response body once the first bytes
   * have arrived, so a failing store is an error before any header is sent; null when the object is gone. Absent on
   * local disk, where the Blob itself is the body (sent with sendfile).
   */
  openBody?(file: Blob, length: number): Promise<BodyInit | null>
  /**
   * The object's own file on this machine, for readers that take a path (the media workers): to be read, never
   * written. Absent where objects are not local files (object stores: copy `file` out instead).
   */
  localPath?(key: StorageKey): string
  /** A URL that fetches the object directly for `expiresIn` seconds (object stores only). */
  presign?(key: StorageKey, expiresIn: number): string
  /**
   * Removes temp copies an interrupted `put` left behind (which `list` does not show as keys) last written before
   * `writtenBefore` (ms since the epoch), so a `put` in progress keeps its copy; returns how many went. Absent where a
   * `put` leaves none (S3).
   */
  removeLeftovers?(writtenBefore: number): Promise<number>
}

/** `put` refused to replace an object already stored under the key (an id collision): the caller picks another id. */
export class StorageKeyTakenError extends Error {
  constructor(readonly key: StorageKey) {
    super(`storage key already taken: ${key}`)
    this.name = 'StorageKeyTakenError'
  }
}

/** The store could not be reached or refused to work (after retries): callers answer 503, never stale or other bytes. */
export class StorageUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StorageUnavailableError'
  }
}

/**
 * Runs a read of stored bytes made through `file()` rather than one of the store's own methods (which retry and say
 * StorageUnavailableError themselves): its failure is the store's too, so it is answered as one (503), and a local
 * disk's own error in its cause (a full disk under a copy) as that.
 */
export async function readStored<T>(what: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (error) {
    if (error instanceof StorageUnavailableError) throw error
    throw new StorageUnavailableError(`storage: ${what} failed: ${String(error)}`, { cause: error })
  }
}

/**
 * Every stored key, `size` at a time: `each` is awaited for each batch, and the event loop is given back between them
 * (a store that lists from memory, or from a buffered page, would otherwise resolve in microtasks only).
 */
export async function listInBatches(storage: Storage, size: number, each: (keys: StorageKey[]) => Promise<void>) {
  let batch: StorageKey[] = []
  for await (const key of storage.list()) {
    batch.push(key)
    if (batch.length < size) continue
    await each(batch)
    batch = []
    await new Promise((resolve) => setImmediate(resolve))
  }
  await each(batch)
}
