import { mkdirSync } from 'node:fs'
import { open, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { TusUpload, User } from '../../db/schema'
import {
  badRequest,
  Conflict,
  type DomainError,
  Gone,
  Locked,
  notFound,
  OffsetConflict,
  TooLarge,
  tooLarge,
} from '../../errors'
import { ipKey } from '../../http/client-ip'
import { INTERNAL_ERROR, knownAnswer } from '../../http/errors'
import { FILENAME_MAX, fileTooLarge, type ReceivedFile } from '../../http/multipart'
import { rateLimitHeaders } from '../../http/rate-limit'
import { randomAlphanumeric } from '../../lib/crypto'
import { DAY_MS, HOUR_MS } from '../../lib/time'
import { log } from '../../log'
import type { AdmittedUpload } from '../images/limits'
import type { UploadOptions, UploadPipeline } from '../images/upload'
import { parseUploadMetadata } from './metadata'
import { TUS_ID_LENGTH, TUS_ID_PATTERN } from './model'
import {
  countOpenUploads,
  deleteTusUpload,
  expiredTusUploads,
  findTusUpload,
  insertTusUpload,
  setTusUploadFields,
  tusUploadExists,
  updateTusUpload,
} from './repository'

export type TusEndpoint = TusUpload['endpoint']

/** Who is calling: which endpoint, the account (null: anonymous web upload) and the client IP. */
export interface TusCaller {
  endpoint: TusEndpoint
  user: User | null
  ip: string
}

export interface TusOptions {
  /** How long an upload may take from its creation; its answer is kept as long. Default 24 hours. */
  ttlMs?: number
  /** Unfinished uploads one account (or one anonymous IP) may hold at once. Default 10. */
  maxOpen?: number
}

/** The pipeline's answer to a finished upload: what the last PATCH and GET send. */
export interface TusResult {
  status: number
  body: Record<string, unknown>
  headers: Record<string, string>
}

const ID = new RegExp(`^${TUS_ID_PATTERN}$`)
/** Files in the tus folder with no row, older than this, are leftovers (a crash between file and row). */
const ORPHAN_AGE_MS = HOUR_MS

export type TusService = ReturnType<typeof createTusService>

/**
 * tus 1.0 upload sessions: creation, offsets, appending chunks, termination, expiry. A finished upload enters the
 * same pipeline as a multipart upload (`pipeline.store`), with the same limits, scan and answer.
 * Partial uploads count against no limit; creation only checks that the finished file could be accepted.
 */
export function createTusService(deps: { db: Db; config: Config; pipeline: UploadPipeline; options?: TusOptions }) {
  const { db, config, pipeline } = deps
  const ttlMs = deps.options?.ttlMs ?? DAY_MS
  const maxOpen = deps.options?.maxOpen ?? 10
  const dir = join(config.dataDir, 'tus')
  mkdirSync(dir, { recursive: true })
  /** Uploads a request is writing to or finishing right now: one at a time per upload. */
  const busy = new Set<string>()
  /** Requests reading an upload's row to claim it, by upload: marked stale when a request lets go of that upload. */
  const claiming = new Map<string, Set<{ stale: boolean }>>()

  const pathOf = (id: string) => join(dir, id)

  /** The upload, if it is the caller's: same endpoint and same account (anonymous ones: any anonymous caller holding the URL). */
  async function find(caller: TusCaller, id: string, now = Date.now()): Promise<TusUpload> {
    const row = ID.test(id) ? await findTusUpload(db, id) : undefined
    if (!row || row.endpoint !== caller.endpoint || row.userId !== (caller.user?.id ?? null))
      throw notFound('Upload not found')
    if (row.expiresAt.getTime() <= now) throw new Gone('Upload expired')
    return row
  }

  /**
   * The caller's upload (as `find`), held by this request until `letGo`: 423 while another request holds it. The
   * row is the one as of the claim: one read while another request let go of an upload is read again.
   */
  async function claim(caller: TusCaller, id: string): Promise<TusUpload> {
    for (;;) {
      const reading = { stale: false }
      const readers = claiming.get(id) ?? new Set()
      claiming.set(id, readers)
      readers.add(reading)
      let row: TusUpload
      try {
        row = await find(caller, id)
      } finally {
        readers.delete(reading)
        if (readers.size === 0) claiming.delete(id)
      }
      if (busy.has(id)) throw new Locked('Upload is busy: another request is writing to it')
      if (!reading.stale) {
        busy.add(id)
        return row
      }
    }
  }

  function letGo(id: string) {
    busy.delete(id)
    for (const reading of claiming.get(id) ?? []) reading.stale = true
  }

  function openCount(caller: TusCaller, now: number) {
    return countOpenUploads(db, caller.user ? { userId: caller.user.id } : { ipKey: ipKey(caller.ip) }, now)
  }

  async function hashFile(path: string) {
    const hasher = new Bun.CryptoHasher('sha256')
    for await (const chunk of Bun.file(path).stream()) hasher.update(chunk)
    return hasher.digest('hex')
  }

  /** Runs the finished file through the pipeline and keeps its answer, success or refusal. */
  async function finish(row: TusUpload, options: UploadOptions, admitted: AdmittedUpload): Promise<TusResult> {
    const fields = parseUploadMetadata(row.metadata)
    const file: ReceivedFile = {
      path: pathOf(row.id),
      filename: (fields.filename || fields.name || 'image').slice(0, FILENAME_MAX),
      size: row.length,
      sha256: await hashFile(pathOf(row.id)),
    }
    let result: TusResult
    try {
      const stored = await pipeline.store([file], fields, options, admitted)
      result = { status: 200, body: stored.body, headers: rateLimitHeaders(stored.window) }
    } catch (error) {
      // Kept as the error model would answer it: a refusal or a fault with its status, anything else a 500.
      const known = knownAnswer(error)
      if (known) {
        result = { status: known.status, body: { error: known.message, ...known.extra }, headers: known.headers }
      } else {
        log.error('tus: finishing an upload failed', { id: row.id, error: String((error as Error)?.stack ?? error) })
        result = { status: 500, body: { ...INTERNAL_ERROR }, headers: {} }
      }
    }
    // The pipeline consumed the file (stored or removed); the answer stays until the upload expires, for a client that
    // lost it, without the delete token and the delete page link that carries it: only their hash is ever stored.
    const { deletePage, deleteToken, ...kept } = result.body
    await setTusUploadFields(db, row.id, {
      offset: row.length,
      finishedAt: new Date(),
      resultStatus: result.status,
      result: JSON.stringify({ body: kept, headers: result.headers }),
    })
    return result
  }

  function storedResult(row: TusUpload): TusResult {
    const saved = JSON.parse(row.result ?? '{}') as { body?: Record<string, unknown>; headers?: Record<string, string> }
    return {
      status: row.resultStatus ?? 500,
      body: saved.body ?? { error: 'Upload result missing' },
      headers: saved.headers ?? {},
    }
  }

  return {
    ttlMs,
    /** Largest Upload-Length an endpoint may accept from anyone but an admin (Tus-Max-Size). */
    maxSize(endpoint: TusEndpoint): number {
      return endpoint === 'api'
        ? config.limits.user.maxFileSize
        : Math.max(config.limits.user.maxFileSize, config.limits.anonymous.maxFileSize)
    },

    /**
     * Creates an upload of `length` bytes. Refuses at once what the pipeline would refuse at the end: a file over the
     * size limit (413), a full quota (413), an exhausted rate window (429), bad options in the metadata (400).
     */
    async create(caller: TusCaller, length: number, metadataHeader: string, now = Date.now()): Promise<TusUpload> {
      if (!Number.isSafeInteger(length) || length < 1)
        throw badRequest('Upload-Length must be a whole number of bytes, at least 1')
      const fields = parseUploadMetadata(metadataHeader)
      const options = pipeline.optionsFor(caller.endpoint, caller)
      await checkCreation(options, length, fields)
      if ((await openCount(caller, now)) >= maxOpen) {
        throw badRequest(`Too many unfinished uploads: at most ${maxOpen}; finish or delete one first`)
      }
      const id = randomAlphanumeric(TUS_ID_LENGTH)
      // File first, row second: a crash in between leaves a file without a row, which the sweep removes.
      await writeFile(pathOf(id), new Uint8Array(0), { flag: 'wx' })
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
    },

    /** The upload's state (HEAD). */
    status(caller: TusCaller, id: string): Promise<TusUpload> {
      return find(caller, id)
    },

    /**
     * Appends the body at `offset` (which must be the upload's current offset). Bytes are written where they belong,
     * so an interrupted request keeps what arrived and the client resumes from there. When the last byte arrives the
     * upload is finished: the pipeline's answer is returned (and kept for GET).
     */
    async append(
      caller: TusCaller,
      id: string,
      offset: number,
      contentLength: number | null,
      body: ReadableStream<Uint8Array> | null,
    ): Promise<{ upload: TusUpload; result: TusResult | null }> {
      let row = await claim(caller, id)
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
          await setTusUploadFields(db, id, { offset: actual })
          throw new OffsetConflict(`Upload data lost: the upload is at ${actual}`, actual)
        }

        let written = 0
        let failure: DomainError | null = null
        if (body) {
          const handle = await open(pathOf(id), 'r+')
          const reader = body.getReader()
          try {
            for (;;) {
              const { done, value } = await reader.read()
              if (done) break
              if (offset + written + value.byteLength > row.length) {
                failure = tooLarge(`The chunk passes Upload-Length (${row.length} bytes)`)
                await reader.cancel().catch(() => {})
                break
              }
              await handle.write(value, 0, value.byteLength, offset + written)
              written += value.byteLength
            }
          } catch {
            // The client went away mid-chunk: what was written stays, the client resumes from the new offset.
            failure = badRequest('Upload interrupted')
          } finally {
            await handle.close()
          }
        }
        const newOffset = failure instanceof TooLarge ? offset : offset + written
        row = await updateTusUpload(db, id, { offset: newOffset })
        if (failure) throw failure
        if (row.offset < row.length) return { upload: row, result: null }
        const result = await finish(row, options, admitted)
        return { upload: (await findTusUpload(db, id))!, result }
      } finally {
        letGo(id)
        admitted?.release()
      }
    },

    /** The answer of a finished upload (GET): 409 while it is still running. */
    async result(caller: TusCaller, id: string): Promise<TusResult> {
      const row = await find(caller, id)
      if (!row.finishedAt) {
        throw new Conflict(`Upload not finished: ${row.offset} of ${row.length} bytes received`, {
          offset: row.offset,
          length: row.length,
        })
      }
      return storedResult(row)
    },

    /** Termination: the upload and its data go; a finished upload's answer goes (its image stays). */
    async terminate(caller: TusCaller, id: string) {
      // Held while its row goes, so no request starts writing to it meanwhile.
      await claim(caller, id)
      try {
        await deleteTusUpload(db, id)
      } finally {
        letGo(id)
      }
      await rm(pathOf(id), { force: true })
    },

    /** Removes expired uploads with their data, and data files that have no upload (older than an hour). */
    async sweep(now = Date.now()): Promise<number> {
      const due = await expiredTusUploads(db, now)
      let removed = 0
      for (const { id } of due) {
        if (busy.has(id)) continue
        // Held while its row goes, so no request starts writing to it meanwhile.
        busy.add(id)
        try {
          await deleteTusUpload(db, id)
        } finally {
          letGo(id)
        }
        await rm(pathOf(id), { force: true })
        removed++
      }
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const id = name.split('.')[0]
        if (busy.has(id) || (ID.test(id) && (await tusUploadExists(db, id)))) continue
        const info = await stat(join(dir, name)).catch(() => null)
        if (info && info.mtimeMs <= now - ORPHAN_AGE_MS) await rm(join(dir, name), { force: true })
      }
      return removed
    },
  }

  async function checkCreation(options: UploadOptions, length: number, fields: Record<string, string>) {
    const { policy } = options
    if (policy.maxFileSize !== null && length > policy.maxFileSize) {
      throw fileTooLarge(policy.maxFileSize)
    }
    pipeline.checkFields(fields, policy)
    await pipeline.check(options, length)
  }
}
