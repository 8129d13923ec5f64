import type { TusUpload } from '../../db/schema'
import { Conflict } from '../../errors'
import { FILENAME_MAX, type ReceivedFile } from '../../http/multipart'
import type { AdmittedUpload } from '../images/limits'
import type { UploadOptions } from '../images/upload'
import { find } from './claims'
import type { TusContext } from './context'
import { parseUploadMetadata } from './metadata'
import { setTusUploadFields } from './repository'
import type { TusCaller, TusOutcome, TusResult } from './service'

async function hashFile(path: string) {
  const hasher = new Bun.CryptoHasher('sha256')
  for await (const chunk of Bun.file(path).stream()) hasher.update(chunk)
  return hasher.digest('hex')
}

/** Runs the finished file through the pipeline and keeps its answer, success or refusal. */
export async function finish(
  ctx: TusContext,
  row: TusUpload,
  options: UploadOptions,
  admitted: AdmittedUpload,
): Promise<TusResult> {
  const { pipeline, pathOf } = ctx
  const fields = parseUploadMetadata(row.metadata)
  const file: ReceivedFile = {
    path: pathOf(row.id),
    filename: (fields.filename || fields.name || 'image').slice(0, FILENAME_MAX),
    size: row.length,
    sha256: await hashFile(pathOf(row.id)),
  }
  const outcome = await pipeline.store([file], fields, options, admitted).then(
    (stored): TusOutcome => ({ stored }),
    (error: unknown): TusOutcome => ({ error }),
  )
  const result = ctx.answer(row.id, outcome)
  // The pipeline consumed the file (stored or removed); the answer stays until the upload expires, for a client that
  // lost it, without the delete token and the delete page link that carries it: only their hash is ever stored.
  const { deletePage, deleteToken, ...kept } = result.body
  await setTusUploadFields(ctx.db, row.id, {
    offset: row.length,
    finishedAt: new Date(),
    resultStatus: result.status,
    result: JSON.stringify({ body: kept, headers: result.headers }),
  })
  return result
}

/** The answer kept with a finished upload. */
export function storedResult(row: TusUpload): TusResult {
  const saved = JSON.parse(row.result ?? '{}') as { body?: Record<string, unknown>; headers?: Record<string, string> }
  return {
    status: row.resultStatus ?? 500,
    body: saved.body ?? { error: 'Upload result missing' },
    headers: saved.headers ?? {},
  }
}

/** The answer of a finished upload (GET): 409 while it is still running. */
export async function result(ctx: TusContext, caller: TusCaller, id: string): Promise<TusResult> {
  const row = await find(ctx, caller, id)
  if (!row.finishedAt) {
    throw new Conflict(`Upload not finished: ${row.offset} of ${row.length} bytes received`, {
      offset: row.offset,
      length: row.length,
    })
  }
  return storedResult(row)
}
