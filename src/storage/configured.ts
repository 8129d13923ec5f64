import type { Config } from '../config'
import type { Storage } from './index'
import { createLocalStorage } from './local'
import { createS3Storage } from './s3'

/** The storage the configuration selects (`STORAGE=local|s3`); the server and the CLI both get it here. */
export function createConfiguredStorage(config: Pick<Config, 'paths' | 'storage'>): Storage {
  if (config.storage.driver === 's3') return createS3Storage(config.storage.s3)
  return createLocalStorage(config.paths.filesDir)
}
