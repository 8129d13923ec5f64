import { open, stat, writeFile } from 'node:fs/promises'
import type { TusUpload } from '../../db/schema'
import { badRequest, type DomainError, Locked, OffsetConflict, TooLarge, tooLarge } from '../../errors'
import { INTERRUPTED, readChunk } from '../../lib/read-chunk'
import { writeAll } from '../../lib/write-all'
import type { AdmittedUpload } from '../images/limits'
import { type Claim, claim, letGo, lostError, stillHeld, updateHeld } from './claims'
import type { TusContext } from './context'
import { finish, storedResult } from './finish'
import { findTusUpload } from './repository'
import type { TusCaller, TusResult } from './service'

/**
 * Appends the body at `offset` (which must be the upload's current offset). Bytes are written where they belong,
 * so an interrupted request keeps what arrived and the client resumes from there. When the last byte arrives the
 * upload is finished: the pipeline's answer is returned (and kept for GET).
 */
export async function append(
  ctx: TusContext,
  caller: TusCaller,
  id: string,
  offset: number,
  contentLength: number | null,
  body: ReadableStream<Uint8Array> | null,
): Promise<{ upload: TusUpload; result: TusResult | null }> {
  const { pipeline, pathOf } = ctx
  const claimed = await claim(ctx, caller, id)
  const { held } = claimed
  let row = claimed.row
  let admitted: AdmittedUpload | undefined
  try {
    if (row.finishedAt) {
      // The last answer was lost: a client that resends the final offset with no data gets it again.
      if (offset === row.length && !contentLength) return { upload: row, result: storedResult(row) }
      throw new OffsetConflict('Upload already finished', row.offset)
    }
    if (offset !== row.offset) {
      throw new OffsetConflict(`Upload-Offset mismatch: the upload is at ${row.offset}`, row.offset)
    }
    if (contentLength !== null && offset + contentLength > row.length) {
      throw tooLarge(`The chunk passes Upload-Length (${row.length} bytes)`)
    }
    // The window and quota follow the creator (an anonymous upload: the address that created it), the in-flight
    // caps and refused-uploads windows the address sending this chunk.
    const options = { ...pipeline.optionsFor(row.endpoint, { user: caller.user, ip: row.ip }), ip: caller.ip }
    admitted = await pipeline.admit(options)

    const onDisk = (await stat(pathOf(id)).catch(() => null))?.size ?? -1
    if (onDisk < row.offset) {
      // The data went missing (disk trouble): resume from what is really there.
      const actual = Math.max(0, onDisk)
      if (onDisk < 0) await writeFile(pathOf(id), new Uint8Array(0))
      await updateHeld(ctx, held, { offset: actual })
      throw new OffsetConflict(`Upload data lost: the upload is at ${actual}`, actual)
    }

    const { written, failure, diskError } = body
      ? await writeBody(ctx, held, row, offset, body)
      : { written: 0, failure: null, diskError: null }
    // A lost claim: the row is another request's now, this one leaves it as it is.
    if (failure instanceof Locked) throw failure
    const newOffset = failure instanceof TooLarge ? offset : offset + written
    row = await updateHeld(ctx, held, { offset: newOffset })
    if (diskError) throw diskError
    if (failure) throw failure
    if (row.offset < row.length) return { upload: row, result: null }
    const result = await finish(ctx, row, options, admitted)
    return { upload: (await findTusUpload(ctx.db, id))!, result }
  } finally {
    await letGo(ctx, held)
    admitted?.release()
  }
}

/**
 * Writes the body into the upload's file from `offset` while the claim holds. Returns the bytes written and why it
 * stopped early: `failure`, the request's (interrupted, lost claim, past Upload-Length), or `diskError`, the disk's
 * own (full, read-only), answered as the fault it is after the offset says what is kept.
 */
async function writeBody(
  ctx: TusContext,
  held: Claim,
  row: TusUpload,
  offset: number,
  body: ReadableStream<Uint8Array>,
): Promise<{ written: number; failure: DomainError | null; diskError: unknown }> {
  let written = 0
  let failure: DomainError | null = null
  let diskError: unknown = null
  const handle = await open(ctx.pathOf(row.id), 'r+')
  const reader = body.getReader()
  try {
    for (;;) {
      const value = await readChunk(reader)
      if (value === INTERRUPTED) {
        // The client went away mid-chunk: what was written stays, the client resumes from the new offset.
        failure = badRequest('Upload interrupted')
        break
      }
      if (value === null) break
      if (!stillHeld(ctx, held)) {
        // This request stalled past its claim: another may be writing now, so nothing more is written.
        failure = lostError()
        await reader.cancel().catch(() => {})
        break
      }
      if (offset + written + value.byteLength > row.length) {
        failure = tooLarge(`The chunk passes Upload-Length (${row.length} bytes)`)
        await reader.cancel().catch(() => {})
        break
      }
      // A chunk counts once the disk took all of it; what a failing write took is left past the offset,
      // overwritten when the client resumes.
      await writeAll(handle, value, offset + written)
      written += value.byteLength
    }
  } catch (error) {
    diskError = error
    await reader.cancel().catch(() => {})
  } finally {
    await handle.close()
  }
  return { written, failure, diskError }
}
