import { writeFile } from 'node:fs/promises'
import type { TusUpload } from '../../db/schema'
import { badRequest } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { fileTooLarge } from '../../http/multipart'
import { randomAlphanumeric } from '../../lib/crypto'
import type { UploadOptions, UploadPipeline } from '../images/upload'
import type { TusContext } from './context'
import { parseUploadMetadata } from './metadata'
import { TUS_ID_LENGTH } from './model'
import { countOpenUploads, insertTusUpload } from './repository'
import type { TusCaller } from './service'

/**
 * Creates an upload of `length` bytes. Refuses at once what the pipeline would refuse at the end: a file over the
 * size limit (413), a full quota (413), an exhausted rate window (429), bad options in the metadata (400).
 */
export async function create(
  ctx: TusContext,
  caller: TusCaller,
  length: number,
  metadataHeader: string,
  now: number,
): Promise<TusUpload> {
  const { db, pipeline, maxOpen, ttlMs } = ctx
  if (!Number.isSafeInteger(length) || length < 1)
    throw badRequest('Upload-Length must be a whole number of bytes, at least 1')
  const fields = parseUploadMetadata(metadataHeader)
  const options = pipeline.optionsFor(caller.endpoint, caller)
  await checkCreation(pipeline, options, length, fields)
  if ((await openCount(ctx, caller, now)) >= maxOpen) {
    throw badRequest(`Too many unfinished uploads: at most ${maxOpen}; finish or delete one first`)
  }
  const id = randomAlphanumeric(TUS_ID_LENGTH)
  // File first, row second: a crash in between leaves a file without a row, which the sweep removes.
  await writeFile(ctx.pathOf(id), new Uint8Array(0), { flag: 'wx' })
  return await insertTusUpload(db, {
    id,
    userId: caller.user?.id ?? null,
    endpoint: caller.endpoint,
    // The key of the per-IP limits (an IPv6 address by its /64): what the upload is counted under when it ends.
    ip: ipKey(caller.ip),
    length,
    offset: 0,
    metadata: metadataHeader.trim(),
    createdAt: new Date(now),
    expiresAt: new Date(now + ttlMs),
  })
}

function openCount(ctx: TusContext, caller: TusCaller, now: number) {
  return countOpenUploads(ctx.db, caller.user ? { userId: caller.user.id } : { ipKey: ipKey(caller.ip) }, now)
}

async function checkCreation(
  pipeline: UploadPipeline,
  options: UploadOptions,
  length: number,
  fields: Record<string, string>,
) {
  const { policy } = options
  if (policy.maxFileSize !== null && length > policy.maxFileSize) {
    throw fileTooLarge(policy.maxFileSize)
  }
  pipeline.checkFields(fields, policy)
  await pipeline.check(options, length)
}
