import { mkdirSync } from 'node:fs'
import type { Config } from '../../config'
import { type Db, run } from '../../db/client'
import { faultPoint } from '../../faults'
import type { ReceivedFile, UploadSource } from '../../http/multipart'
import type { Media } from '../../media'
import type { Classifier, NsfwThresholds } from '../../moderation'
import type { Storage } from '../../storage'
import type { BlockService } from '../blocks/service'
import { type ImageEvents, noImageEvents } from './events'
import { type AdmittedUpload, createUploadAdmission, type UploadPolicy } from './limits'
import { prepareOwnedImageWithPhash } from './repository'
import type { ImageService } from './service'
import {
  earlyRefusals,
  optionsFor,
  readFields,
  refusable,
  type UploadCaller,
  type UploadEndpoint,
  type UploadOptions,
} from './upload/admit'
import { answer } from './upload/answer'
import { commit } from './upload/commit'
import { inspect } from './upload/inspect'
import { dropIntents, instanceId, recordIntent } from './upload/intents'
import { admittedDoor, arrivingBodies, type ChooseOptions, withUrls } from './upload/receive'
import { openUploadSession } from './upload/session'
import { store as storeFiles } from './upload/store'

export type { UploadCaller, UploadEndpoint, UploadOptions }

export type UploadPipeline = ReturnType<typeof createUploadPipeline>

/**
 * The one upload pipeline behind every door; the caller's policy decides limits and scanning. An upload is a short
 * story, one step a file in ./upload/: admit, receive, inspect, store, commit, answer, inside an upload session that
 * removes the upload's temp files, and what it stored unless it committed.
 */
export function createUploadPipeline(deps: {
  db: Db
  config: Config
  storage: Storage
  media: Media
  classifier: Classifier
  thresholds: NsfwThresholds
  /** Refuses blocked bytes and pictures. */
  blocks: Pick<BlockService, 'refuseBytes' | 'refusePictures'>
  /** Gives the answer's view of each stored image. */
  images: Pick<ImageService, 'uploadedView'>
  /** Counts every stored batch. */
  metrics?: { uploaded(count: number, bytes: number): void }
  /** Told of every stored image, after its row is committed. */
  events?: ImageEvents
  /** The service's clock, for the rate windows and the rows' times (tests step it). */
  now?: () => number
  /**
   * Whose upload intents these are (intents.ts): the data directory's by default (the server, whose next start sweeps
   * them); another process storing beside a running server (`cli import`) names itself, so no server start takes its
   * uploads in progress for a crash's (the hourly sweep takes them if it dies).
   */
  instance?: string
}) {
  const { db, config } = deps
  const clock = deps.now ?? Date.now
  mkdirSync(config.paths.tmpDir, { recursive: true })
  const admission = createUploadAdmission(db, config, clock)
  const instance = deps.instance ?? instanceId(config.paths.dataDir)
  const intentLog = {
    record: (id: string, ext: string) => recordIntent(db, { id, ext, instance }),
    drop: (ids: string[]) => run(dropIntents(db, ids)),
  }
  const inspectDeps = { ...deps, scanTimeoutMs: config.nsfw.timeoutMs, findOwnedPhash: prepareOwnedImageWithPhash(db) }
  const answerDeps = { ...deps, events: deps.events ?? noImageEvents }
  const arriving = arrivingBodies()

  /**
   * Files already received (multipart parts, a finished tus upload, an imported file), for an upload that `admit` let
   * in: all or nothing. Returns the answer's body, its views and rows, and the upload window it counted in.
   */
  async function store(
    files: ReceivedFile[],
    fields: Record<string, string>,
    opts: UploadOptions,
    admitted: AdmittedUpload,
  ) {
    const session = openUploadSession(deps.storage, files, intentLog)
    try {
      const options = readFields(config, fields, opts.policy)
      await earlyRefusals({ admission, blocks: deps.blocks }, files, opts, admitted)
      const inspected = await refusable(admission, opts, () => inspect(inspectDeps, session, files, options.nsfw, opts))
      const ids = await storeFiles(session, inspected)
      await faultPoint('upload-stored')
      const committed = await commit(db, session, { opts, options, inspected, ids, now: clock() })
      admitted.committed()
      return answer(
        answerDeps,
        committed,
        inspected.map((p) => p.duplicate),
      )
    } finally {
      await session.end()
    }
  }

  return {
    optionsFor: (endpoint: UploadEndpoint, caller: UploadCaller) => optionsFor(config, endpoint, caller),
    /**
     * The streamed entry: once the upload is let in, `source` streams its files to temp files; then they are stored.
     * `choose` is the caller's options, or how a door that names its caller in the body decides them from the fields
     * that come before the first file.
     */
    async upload(source: UploadSource, choose: ChooseOptions) {
      const door = admittedDoor(admission, config.paths.tmpDir, choose)
      await door.admitKnown()
      try {
        const { files, fields, opts, admitted } = await arriving.receive(door.receive(source))
        return await store(files, fields, opts, admitted)
      } finally {
        door.release()
      }
    },
    /** How many uploads' bodies are arriving now (what a shutdown waits for). */
    arriving: () => arriving.count(),
    /**
     * The shutdown's deadline: every upload still arriving is answered 503 (ServerStopping) now; `cleaned` resolves
     * once their temp files are removed, which takes their connections closing (their bodies end there).
     */
    cut: () => arriving.cut(),
    /** `source` plus the files its `url` fields name (receive.ts). */
    withUrls: (source: UploadSource) => withUrls(config.urlUploads, source),
    /** Lets an upload that arrives some other way (a tus PATCH) start, before its body is read; release it when done. */
    admit: (opts: UploadOptions) => admission.admit(opts.policy, opts.ip),
    /** Whether an upload of `bytes` could start now (a tus creation); holds nothing. */
    check: (opts: UploadOptions, bytes: number) => admission.check(opts.policy, opts.ip, bytes),
    /** The entry for files received some other way (a finished tus upload, an imported file): same checks, same answer. */
    store,
    /** Checks upload fields (visibility, album, ...) without storing anything: 400 when the pipeline would refuse them. */
    checkFields(fields: Record<string, string>, policy: UploadPolicy) {
      readFields(config, fields, policy)
    },
  }
}
