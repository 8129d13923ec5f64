import { join } from 'node:path'
import type { Config } from '../config'
import type { Storage } from './index'
import { createLocalStorage } from './local'

/** The storage the configuration selects; the server and the CLI both get it here. */
export function createConfiguredStorage(config: Pick<Config, 'dataDir'>): Storage {
  return createLocalStorage(join(config.dataDir, 'files'))
}
