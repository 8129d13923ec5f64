import type { Delivery } from './serve'

/** Largest file kept in memory: at 2 MB a file from disk is already as fast, and big ones would crowd the rest out. */
const HOT_FILE_MAX_BYTES = 1024 * 1024
/** Bytes of file contents kept in memory in all. */
const HOT_FILES_MAX_BYTES = 64 * 1024 * 1024

/**
 * The contents of recently served small files on local disk, kept in memory: an answer from memory skips the open,
 * stat, read and close that a file body costs on every request (~1.6x the throughput for a 188 KB file,
 * bench/README.md). Keyed by the file's delivery, one per cached image and file (images/live-cache.ts), so an image
 * that changed or went is never answered from here: its next entry has a new delivery, and a removed one is 404 before
 * its delivery is looked at. A file is read in the background after a request served it from disk. Bounded in bytes,
 * least recently used first.
 */
export function createHotFiles(maxBytes = HOT_FILES_MAX_BYTES, maxFileBytes = HOT_FILE_MAX_BYTES) {
  const entries = new Map<Delivery, Blob>()
  const loading = new Set<Delivery>()
  let held = 0

  function add(d: Delivery, blob: Blob) {
    while (held + blob.size > maxBytes && entries.size > 0) {
      const [oldest, old] = entries.entries().next().value!
      entries.delete(oldest)
      held -= old.size
    }
    entries.set(d, blob)
    held += blob.size
  }

  return {
    /** The delivery's file from memory, or undefined. */
    get(d: Delivery): Blob | undefined {
      const blob = entries.get(d)
      if (blob) {
        // Most recently used last: a Map keeps insertion order.
        entries.delete(d)
        entries.set(d, blob)
      }
      return blob
    },
    /** Reads the delivery's file into memory for the next requests, when it is small enough and not there yet. */
    load(d: Delivery, file: Blob, size: number) {
      if (size > maxFileBytes || size > maxBytes || entries.has(d) || loading.has(d)) return
      loading.add(d)
      file
        .bytes()
        .then(
          // Files are final under their key; a different length would mean a file replaced by hand: keep serving the disk.
          (bytes) => bytes.byteLength === size && add(d, new Blob([bytes])),
          () => {}, // gone meanwhile: the disk path answers as before
        )
        .finally(() => loading.delete(d))
    },
    get bytes() {
      return held
    },
    get size() {
      return entries.size
    },
  }
}

export type HotFiles = ReturnType<typeof createHotFiles>
