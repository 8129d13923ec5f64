import type { Db } from '../../db/client'
import type { UploadPipeline } from '../images/upload'
import { TUS_ID_PATTERN } from './model'
import type { TusAnswer } from './service'

/** What every use case of the tus service shares: its dependencies, its settings and this process's held uploads. */
export interface TusContext {
  db: Db
  pipeline: UploadPipeline
  answer: TusAnswer
  ttlMs: number
  maxOpen: number
  claimMs: number
  /** The clock of expiries and claims (epoch ms). */
  clock: () => number
  /** The folder of the uploads' data files. */
  dir: string
  pathOf: (id: string) => string
  /** Uploads a request of this process holds right now (the orphan sweep leaves their files alone). */
  holding: Set<string>
}

export const TUS_ID = new RegExp(`^${TUS_ID_PATTERN}$`)
