import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config'
import { randomToken } from './crypto'

/** JWT_SECRET, or a secret generated on first start and kept in the data directory so restarts keep sessions. */
export function loadJwtSecret(config: Pick<Config, 'jwtSecret' | 'dataDir'>): string {
  if (config.jwtSecret) return config.jwtSecret
  const path = join(config.dataDir, 'jwt-secret')
  if (existsSync(path)) return readFileSync(path, 'utf8').trim()
  const secret = randomToken(48)
  writeFileSync(path, secret, { mode: 0o600 })
  return secret
}
