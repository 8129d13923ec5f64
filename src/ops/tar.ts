/**
 * A tar archive (POSIX ustar) written as its files come, each streamed from its source: a backup's `.tar` needs no
 * copy of the files on disk first, and its memory stays that of one write buffer. GNU tar and bsdtar read it.
 */
import { closeSync, openSync } from 'node:fs'

const BLOCK = 512
/** Bytes written ahead of the disk at most: the sink flushes past this. */
const BUFFER = 1 << 20

/** `value` in octal, `width - 1` digits and a NUL (ustar's numeric fields). */
const octal = (value: number, width: number) => `${value.toString(8).padStart(width - 1, '0')}\0`

function header(name: string, size: number, mtimeMs: number, mode: number): Uint8Array {
  const bytes = new TextEncoder().encode(name)
  if (bytes.length > 99) throw new Error(`tar: name too long: ${name}`)
  const block = new Uint8Array(BLOCK)
  const put = (text: string, at: number) => block.set(new TextEncoder().encode(text), at)
  block.set(bytes, 0)
  put(octal(mode, 8), 100)
  put(octal(0, 8), 108) // uid
  put(octal(0, 8), 116) // gid
  put(octal(size, 12), 124)
  put(octal(Math.floor(mtimeMs / 1000), 12), 136)
  put('        ', 148) // the checksum counts its own field as spaces
  put('0', 156) // a regular file
  put('ustar\u000000', 257)
  let sum = 0
  for (const byte of block) sum += byte
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
  return block
}

/**
 * Writes an archive at `path`, a new file readable by its owner only (it holds the secrets): `add` each file (its
 * exact size first), then `end`.
 */
export function tarWriter(path: string) {
  closeSync(openSync(path, 'wx', 0o600))
  const sink = Bun.file(path).writer({ highWaterMark: BUFFER })
  return {
    /** `mode` defaults to 0644; a secret or a database is added 0600, so extracting it keeps it private. */
    async add(
      name: string,
      file: { size: number; lastModified: number; stream(): ReadableStream<Uint8Array>; mode?: number },
    ) {
      sink.write(header(name, file.size, file.lastModified, file.mode ?? 0o644))
      let written = 0
      let unflushed = 0
      for await (const chunk of file.stream()) {
        written += chunk.length
        if (written > file.size) break
        sink.write(chunk)
        unflushed += chunk.length
        // Waits for the disk past one buffer: a large original read faster than it is written is not held whole.
        if (unflushed >= BUFFER) {
          await sink.flush()
          unflushed = 0
        }
      }
      // A file that changed while it was read would misalign every entry after it: refused rather than archived wrong.
      if (written !== file.size) throw new Error(`tar: ${name} changed while it was archived`)
      const pad = (BLOCK - (file.size % BLOCK)) % BLOCK
      if (pad > 0) sink.write(new Uint8Array(pad))
      await sink.flush()
    },
    /** Two empty blocks end the archive. */
    async end() {
      sink.write(new Uint8Array(2 * BLOCK))
      await sink.end()
    },
  }
}
