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
import { FILENAME_MAX, fileTooLarge, type ReceivedFile } from '../../http/multipart'
import { randomAlphanumeric } from '../../lib/crypto'
import { DAY_MS, HOUR_MS } from '../../lib/time'
import { writeAll } from '../../lib/write-all'
import { log } from '../../log'
import type { AdmittedUpload } from '../images/limits'
import type { UploadOptions, UploadPipeline } from '../images/upload'
import { parseUploadMetadata } from './metadata'
import { TUS_ID_LENGTH, TUS_ID_PATTERN } from './model'
import {
  claimTusUpload,
  countOpenUploads,
  deleteExpiredTusUploads,
  deleteTusUpload,
  findTusUpload,
  insertTusUpload,
  releaseTusClaim,
  setTusUploadFields,
  tusUploadExists,
  updateClaimedTusUpload,
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
  /**
   * How long a request's claim on an upload lasts unless renewed; the request renews it every third of that while it
   * runs, so only a stopped one's (a crashed instance's) runs out. Default 60 seconds.
   */
  claimMs?: number
  /** The clock of expiries and claims (epoch ms): Date.now unless a test passes one it can step forward. */
  now?: () => number
}

/** The pipeline's answer to a finished upload: what the last PATCH and GET send. */
export interface TusResult {
  status: number
  body: Record<string, unknown>
  headers: Record<string, string>
}

/** How a finished upload ended: stored (the pipeline's result), or refused or failed (what it threw). */
export type TusOutcome = { stored: Awaited<ReturnType<UploadPipeline['store']>> } | { error: unknown }
/**
 * The answer an outcome gets, kept with the upload for a client that lost it: the controller's (src/modules/tus),
 * wired in by app.ts, since this service knows no HTTP.
 */
export type TusAnswer = (id: string, outcome: TusOutcome) => TusResult

const ID = new RegExp(`^${TUS_ID_PATTERN}$`)
/** Files in the tus folder with no row, older than this, are leftovers (a crash between file and row). */
const ORPHAN_AGE_MS = HOUR_MS
const CLAIM_MS = 60_000

/** A request's hold on an upload: the `claimed_until` it wrote last (which is also its token in the row). */
interface Claim {
  id: string
  until: number
  /** Set once a renewal found the row claimed by another request (or gone): this one must stop writing. */
  lost: boolean
  /** The claim's writes run one at a time: a renewal never races the request's own update of the row. */
  queue: Promise<unknown>
  renewal?: ReturnType<typeof setInterval>
}

const busyError = () => new Locked('Upload is busy: another request is writing to it')

export type TusService = ReturnType<typeof createTusService>

/**
 * tus 1.0 upload sessions: creation, offsets, appending chunks, termination, expiry. A finished upload enters the
 * same pipeline as a multipart upload (`pipeline.store`), with the same limits, scan and answer.
 * Partial uploads count against no limit; creation only checks that the finished file could be accepted.
 */
export function createTusService(deps: {
  db: Db
  config: Config
  pipeline: UploadPipeline
  answer: TusAnswer
  options?: TusOptions
}) {
  const { db, config, pipeline } = deps
  const ttlMs = deps.options?.ttlMs ?? DAY_MS
  const maxOpen = deps.options?.maxOpen ?? 10
  const claimMs = deps.options?.claimMs ?? CLAIM_MS
  const clock = deps.options?.now ?? Date.now
  // Shared by every instance of one database (TUS_DIR on a shared volume): a chunk may reach any of them.
  const dir = config.tusDir
  mkdirSync(dir, { recursive: true })
  /** Uploads a request of this process holds right now (the orphan sweep leaves their files alone). */
  const holding = new Set<string>()

  const pathOf = (id: string) => join(dir, id)

  /** The upload, if it is the caller's: same endpoint and same account (anonymous ones: any anonymous caller holding the URL). */
  async function find(caller: TusCaller, id: string, now = clock()): Promise<TusUpload> {
    const row = ID.test(id) ? await findTusUpload(db, id) : undefined
    if (!row || row.endpoint !== caller.endpoint || row.userId !== (caller.user?.id ?? null))
      throw notFound('Upload not found')
    if (row.expiresAt.getTime() <= now) throw new Gone('Upload expired')
    return row
  }

  /**
   * The caller's upload (as `find`), held by this request until `letGo`, whichever instance it reached: 423 while
   * another request holds it. The claim is one conditional UPDATE of the row (src/modules/tus/repository.ts), which
   * returns the row as of the claim; it lasts `claimMs` and is renewed while the request runs.
   */
  async function claim(caller: TusCaller, id: string): Promise<{ row: TusUpload; held: Claim }> {
    const now = clock()
    const owner = { endpoint: caller.endpoint, userId: caller.user?.id ?? null }
    const row = ID.test(id) ? await claimTusUpload(db, id, owner, now, now + claimMs) : undefined
    if (!row) {
      // Not claimed: not the caller's (404), expired (410), or held by another request (423).
      await find(caller, id, now)
      throw busyError()
    }
    const held: Claim = { id, until: now + claimMs, lost: false, queue: Promise.resolve() }
    held.renewal = setInterval(() => void renew(held), Math.max(1, Math.floor(claimMs / 3)))
    held.renewal.unref?.()
    holding.add(id)
    return { row, held }
  }

  /** Runs one write of a claim after the ones before it. */
  function inTurn<T>(held: Claim, write: () => Promise<T>): Promise<T> {
    const done = held.queue.then(write)
    held.queue = done.catch(() => {})
    return done
  }

  /** Extends the claim; a row claimed by another request since (this one's ran out) marks it lost. */
  function renew(held: Claim) {
    return inTurn(held, async () => {
      if (held.lost) return
      const until = clock() + claimMs
      try {
        if (await updateClaimedTusUpload(db, held.id, held.until, { claimedUntil: new Date(until) })) held.until = until
        else held.lost = true
      } catch (error) {
        // Tried again at the next turn; the claim runs out if the database stays out of reach that long.
        log.warn('tus: renewing a claim failed', { id: held.id, error: String(error) })
      }
    })
  }

  /** Whether the request still holds its claim: not lost, and not run out by this clock (renewals keep it ahead). */
  const stillHeld = (held: Claim) => !held.lost && clock() < held.until

  const lostError = () => new Locked('Upload is busy: this request held it too long and another request took it over')

  /** Updates the row while the claim is the request's own; 423 once it was lost (the row is another request's). */
  async function updateHeld(held: Claim, set: Partial<TusUpload>): Promise<TusUpload> {
    const row = stillHeld(held)
      ? await inTurn(held, () => updateClaimedTusUpload(db, held.id, held.until, set))
      : undefined
    if (!row) {
      held.lost = true
      throw lostError()
    }
    return row
  }

  /** Ends the request's claim: the upload is free for the next request, on any instance. */
  async function letGo(held: Claim) {
    clearInterval(held.renewal)
    holding.delete(held.id)
    await inTurn(held, async () => {
      if (!held.lost) await releaseTusClaim(db, held.id, held.until)
    }).catch((error) =>
      // It runs out on its own.
      log.warn('tus: releasing a claim failed', { id: held.id, error: String(error) }),
    )
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
    const outcome = await pipeline.store([file], fields, options, admitted).then(
      (stored): TusOutcome => ({ stored }),
      (error: unknown): TusOutcome => ({ error }),
    )
    const result = deps.answer(row.id, outcome)
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
    async create(caller: TusCaller, length: number, metadataHeader: string, now = clock()): Promise<TusUpload> {
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
      const claimed = await claim(caller, id)
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
          await updateHeld(held, { offset: actual })
          throw new OffsetConflict(`Upload data lost: the upload is at ${actual}`, actual)
        }

        let written = 0
        let failure: DomainError | null = null
        // The disk's own failure (full, read-only): answered as the fault it is, after the offset says what is kept.
        let diskError: unknown = null
        if (body) {
          const handle = await open(pathOf(id), 'r+')
          const reader = body.getReader()
          try {
            for (;;) {
              let chunk: Awaited<ReturnType<typeof reader.read>>
              try {
                chunk = await reader.read()
              } catch {
                // The client went away mid-chunk: what was written stays, the client resumes from the new offset.
                failure = badRequest('Upload interrupted')
                break
              }
              const { done, value } = chunk
              if (done) break
              if (!stillHeld(held)) {
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
        }
        // A lost claim: the row is another request's now, this one leaves it as it is.
        if (failure instanceof Locked) throw failure
        const newOffset = failure instanceof TooLarge ? offset : offset + written
        row = await updateHeld(held, { offset: newOffset })
        if (diskError) throw diskError
        if (failure) throw failure
        if (row.offset < row.length) return { upload: row, result: null }
        const result = await finish(row, options, admitted)
        return { upload: (await findTusUpload(db, id))!, result }
      } finally {
        await letGo(held)
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
      const { held } = await claim(caller, id)
      try {
        await deleteTusUpload(db, id)
      } finally {
        await letGo(held)
      }
      await rm(pathOf(id), { force: true })
    },

    /**
     * Removes expired uploads with their data, and data files that have no upload (older than an hour). An upload a
     * request holds (on any instance) stays until the next sweep after its claim ends.
     */
    async sweep(now = clock()): Promise<number> {
      // One statement: a claim cannot land between the check and the delete, and a deleted row cannot be claimed.
      const gone = await deleteExpiredTusUploads(db, now, clock())
      for (const { id } of gone) await rm(pathOf(id), { force: true })
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const id = name.split('.')[0]
        if (holding.has(id) || (ID.test(id) && (await tusUploadExists(db, id)))) continue
        const info = await stat(join(dir, name)).catch(() => null)
        if (info && info.mtimeMs <= now - ORPHAN_AGE_MS) await rm(join(dir, name), { force: true })
      }
      return gone.length
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
