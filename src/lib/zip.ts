import { mkdtemp, open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'

/**
 * A streaming zip writer (PKWARE APPNOTE 6.3): entries are STOREd (images are compressed already), each followed by a
 * data descriptor, since its size and CRC are known only once its bytes have passed; names are UTF-8 (flag bit 11).
 * ZIP64 records are written when an entry, an offset or the archive passes 4 GiB, or the entries pass 65,535.
 */

export interface ZipEntry {
  /** The path inside the archive, `/`-separated. */
  name: string
  /** Bytes, or a stream of them (read once, as the archive is read). */
  data: Uint8Array | ReadableStream<Uint8Array>
  modified?: Date
}

export interface ZipOptions {
  /** Sizes and offsets from this on are written as ZIP64 (the format's own limit by default; tests lower it). */
  zip64Bytes?: number
  /** Entry counts from this on are written as ZIP64 (65,535 by default). */
  zip64Entries?: number
  /**
   * A folder for the central directory while the entries stream (a temp folder of its own is made in it and removed):
   * without it the directory is held in memory, about 80 bytes an entry.
   */
  spoolDir?: string
}

const MAX32 = 0xffffffff
const MAX16 = 0xffff
const FLAGS = 0x0008 | 0x0800
const VERSION = 20
const VERSION_ZIP64 = 45
/** Made on Unix (the external attributes hold a mode). */
const MADE_BY_UNIX = 3 << 8
/** A regular file, rw-r--r--, in the high half of the external attributes. */
const FILE_MODE = (0o100644 << 16) >>> 0

/** MS-DOS date and time, in local fields as every reader shows them (2-second steps, 1980 on). */
function dosTime(date: Date) {
  const year = Math.max(1980, date.getUTCFullYear())
  return {
    time: (date.getUTCHours() << 11) | (date.getUTCMinutes() << 5) | (date.getUTCSeconds() >> 1),
    date: ((year - 1980) << 9) | ((date.getUTCMonth() + 1) << 5) | date.getUTCDate(),
  }
}

/** What the central directory says of an entry. */
interface Written {
  name: Buffer
  crc: number
  size: number
  offset: number
  time: number
  date: number
}

/** The central directory's records, in memory or spooled to a temp file as they come. */
async function directory(spoolDir: string | undefined) {
  const held: Buffer[] = []
  if (!spoolDir) {
    return {
      add: async (record: Buffer) => void held.push(record),
      async *records() {
        yield* held
      },
      close: async () => {},
    }
  }
  const dir = await mkdtemp(join(spoolDir, 'zip-'))
  const path = join(dir, 'directory')
  const file = await open(path, 'w+')
  let pending: Buffer[] = []
  let pendingBytes = 0
  let written = 0
  const flush = async () => {
    const chunk = Buffer.concat(pending)
    pending = []
    pendingBytes = 0
    await file.write(chunk, 0, chunk.length, written)
    written += chunk.length
  }
  return {
    async add(record: Buffer) {
      pending.push(record)
      pendingBytes += record.length
      if (pendingBytes >= 256 * 1024) await flush()
    },
    async *records() {
      await flush()
      const chunk = Buffer.alloc(256 * 1024)
      for (let at = 0; at < written; ) {
        const { bytesRead } = await file.read(chunk, 0, Math.min(chunk.length, written - at), at)
        at += bytesRead
        yield Buffer.from(chunk.subarray(0, bytesRead))
      }
    },
    async close() {
      await file.close().catch(() => {})
      await rm(dir, { recursive: true, force: true })
    },
  }
}

function localHeader(name: Buffer, time: number, date: number) {
  const header = Buffer.alloc(30)
  header.writeUInt32LE(0x04034b50, 0)
  header.writeUInt16LE(VERSION_ZIP64, 4)
  header.writeUInt16LE(FLAGS, 6)
  header.writeUInt16LE(0, 8) // STORE
  header.writeUInt16LE(time, 10)
  header.writeUInt16LE(date, 12)
  // CRC and sizes: 0 here, in the data descriptor after the bytes (flag bit 3).
  header.writeUInt16LE(name.length, 26)
  header.writeUInt16LE(0, 28)
  return Buffer.concat([header, name])
}

/** The descriptor after an entry's bytes: 8-byte sizes when the entry is ZIP64 (as the central directory says). */
function dataDescriptor(crc: number, size: number, zip64: boolean) {
  const out = Buffer.alloc(zip64 ? 24 : 16)
  out.writeUInt32LE(0x08074b50, 0)
  out.writeUInt32LE(crc, 4)
  if (zip64) {
    out.writeBigUInt64LE(BigInt(size), 8)
    out.writeBigUInt64LE(BigInt(size), 16)
  } else {
    out.writeUInt32LE(size, 8)
    out.writeUInt32LE(size, 12)
  }
  return out
}

function centralRecord(entry: Written, limit: number) {
  const bigSize = entry.size >= limit
  const bigOffset = entry.offset >= limit
  // The ZIP64 extra field holds, in this order, only the values whose 32-bit field says 0xFFFFFFFF.
  const wide = [...(bigSize ? [entry.size, entry.size] : []), ...(bigOffset ? [entry.offset] : [])]
  const extra = Buffer.alloc(wide.length ? 4 + 8 * wide.length : 0)
  if (wide.length) {
    extra.writeUInt16LE(0x0001, 0)
    extra.writeUInt16LE(8 * wide.length, 2)
    for (const [i, value] of wide.entries()) extra.writeBigUInt64LE(BigInt(value), 4 + 8 * i)
  }
  const record = Buffer.alloc(46)
  record.writeUInt32LE(0x02014b50, 0)
  record.writeUInt16LE(MADE_BY_UNIX | VERSION_ZIP64, 4)
  record.writeUInt16LE(wide.length ? VERSION_ZIP64 : VERSION, 6)
  record.writeUInt16LE(FLAGS, 8)
  record.writeUInt16LE(0, 10)
  record.writeUInt16LE(entry.time, 12)
  record.writeUInt16LE(entry.date, 14)
  record.writeUInt32LE(entry.crc, 16)
  record.writeUInt32LE(bigSize ? MAX32 : entry.size, 20)
  record.writeUInt32LE(bigSize ? MAX32 : entry.size, 24)
  record.writeUInt16LE(entry.name.length, 28)
  record.writeUInt16LE(extra.length, 30)
  // Comment length, disk number, internal attributes: 0.
  record.writeUInt32LE(FILE_MODE, 38)
  record.writeUInt32LE(bigOffset ? MAX32 : entry.offset, 42)
  return Buffer.concat([record, entry.name, extra])
}

/** The end records: ZIP64's record and locator first when a count, size or offset needs them. */
function endRecords(count: number, size: number, offset: number, opts: Required<Omit<ZipOptions, 'spoolDir'>>) {
  const zip64 = count >= opts.zip64Entries || size >= opts.zip64Bytes || offset >= opts.zip64Bytes
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(zip64 ? MAX16 : count, 8)
  end.writeUInt16LE(zip64 ? MAX16 : count, 10)
  end.writeUInt32LE(zip64 ? MAX32 : size, 12)
  end.writeUInt32LE(zip64 ? MAX32 : offset, 16)
  if (!zip64) return end
  const record = Buffer.alloc(56)
  record.writeUInt32LE(0x06064b50, 0)
  record.writeBigUInt64LE(44n, 4)
  record.writeUInt16LE(MADE_BY_UNIX | VERSION_ZIP64, 12)
  record.writeUInt16LE(VERSION_ZIP64, 14)
  record.writeBigUInt64LE(BigInt(count), 24)
  record.writeBigUInt64LE(BigInt(count), 32)
  record.writeBigUInt64LE(BigInt(size), 40)
  record.writeBigUInt64LE(BigInt(offset), 48)
  const locator = Buffer.alloc(20)
  locator.writeUInt32LE(0x07064b50, 0)
  locator.writeBigUInt64LE(BigInt(offset + size), 8)
  locator.writeUInt32LE(1, 16)
  return Buffer.concat([record, locator, end])
}

async function* bytesOf(data: ZipEntry['data']): AsyncGenerator<Uint8Array> {
  if (data instanceof Uint8Array) {
    yield data
    return
  }
  const reader = data.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      yield value
    }
  } finally {
    // An archive abandoned half-way (the client went away) stops reading the store too.
    await reader.cancel().catch(() => {})
  }
}

/** The archive's bytes, entry by entry as `entries` yields them: nothing but one chunk and the directory is held. */
export async function* zipChunks(entries: AsyncIterable<ZipEntry>, options: ZipOptions = {}) {
  const opts = { zip64Bytes: options.zip64Bytes ?? MAX32, zip64Entries: options.zip64Entries ?? MAX16 }
  const dir = await directory(options.spoolDir)
  try {
    let offset = 0
    let count = 0
    for await (const entry of entries) {
      const name = Buffer.from(entry.name, 'utf8')
      const { time, date } = dosTime(entry.modified ?? new Date())
      const start = offset
      const header = localHeader(name, time, date)
      yield header
      offset += header.length
      let crc = 0
      let size = 0
      for await (const chunk of bytesOf(entry.data)) {
        crc = crc32(chunk, crc)
        size += chunk.length
        offset += chunk.length
        yield chunk
      }
      const descriptor = dataDescriptor(crc, size, size >= opts.zip64Bytes)
      yield descriptor
      offset += descriptor.length
      await dir.add(centralRecord({ name, crc, size, offset: start, time, date }, opts.zip64Bytes))
      count++
    }
    let size = 0
    for await (const record of dir.records()) {
      size += record.length
      yield record
    }
    yield endRecords(count, size, offset, opts)
  } finally {
    await dir.close()
  }
}

/** The archive as a response body, read as fast as the client takes it (a pull a chunk), with its entries. */
export function zipStream(entries: AsyncIterable<ZipEntry>, options: ZipOptions = {}): ReadableStream<Uint8Array> {
  const chunks = zipChunks(entries, options)
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await chunks.next()
        if (done) controller.close()
        else controller.enqueue(value)
      } catch (error) {
        controller.error(error)
      }
    },
    async cancel() {
      await chunks.return(undefined)
    },
  })
}
