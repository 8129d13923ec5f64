import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { TusUpload, User } from '../../db/schema'
import { DAY_MS } from '../../lib/time'
import type { UploadPipeline } from '../images/upload'
import { append } from './append'
import { find } from './claims'
import type { TusContext } from './context'
import { create } from './create'
import { result } from './finish'
import { sweep, terminate } from './remove'

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

const CLAIM_MS = 60_000

export type TusService = ReturnType<typeof createTusService>

/**
 * tus 1.0 upload sessions: creation, offsets, appending chunks, termination, expiry. A finished upload enters the
 * same pipeline as a multipart upload (`pipeline.store`), with the same limits, scan and answer.
 * Partial uploads count against no limit; creation only checks that the finished file could be accepted.
 * Each use case has its file beside this one (create, append, finish, remove; claims.ts holds an upload for one
 * request), handed what they share as a `TusContext`.
 */
export function createTusService(deps: {
  db: Db
  config: Config
  pipeline: UploadPipeline
  answer: TusAnswer
  options?: TusOptions
}) {
  const { db, config, pipeline, answer } = deps
  // Shared by every instance of one database (TUS_DIR on a shared volume): a chunk may reach any of them.
  const dir = config.paths.tusDir
  mkdirSync(dir, { recursive: true })
  const ctx: TusContext = {
    db,
    pipeline,
    answer,
    ttlMs: deps.options?.ttlMs ?? DAY_MS,
    maxOpen: deps.options?.maxOpen ?? 10,
    claimMs: deps.options?.claimMs ?? CLAIM_MS,
    clock: deps.options?.now ?? Date.now,
    dir,
    pathOf: (id) => join(dir, id),
    holding: new Set(),
  }

  return {
    ttlMs: ctx.ttlMs,
    /** Largest Upload-Length an endpoint may accept from anyone but an admin (Tus-Max-Size). */
    maxSize(endpoint: TusEndpoint): number {
      return endpoint === 'api'
        ? config.limits.user.maxFileSize
        : Math.max(config.limits.user.maxFileSize, config.limits.anonymous.maxFileSize)
    },
    create: (caller: TusCaller, length: number, metadataHeader: string, now = ctx.clock()) =>
      create(ctx, caller, length, metadataHeader, now),
    /** The upload's state (HEAD). */
    status: (caller: TusCaller, id: string) => find(ctx, caller, id),
    append: (
      caller: TusCaller,
      id: string,
      offset: number,
      contentLength: number | null,
      body: ReadableStream<Uint8Array> | null,
    ) => append(ctx, caller, id, offset, contentLength, body),
    result: (caller: TusCaller, id: string) => result(ctx, caller, id),
    terminate: (caller: TusCaller, id: string) => terminate(ctx, caller, id),
    sweep: (now = ctx.clock()) => sweep(ctx, now),
  }
}
