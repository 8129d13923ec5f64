import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomToken } from './crypto'

/** `given`, or a secret generated on first start and kept in the data directory (owner only) so restarts keep it. */
function loadSecret(given: string, dataDir: string, file: string): string {
  if (given) return given
  const path = join(dataDir, file)
  if (existsSync(path)) return readFileSync(path, 'utf8').trim()
  const secret = randomToken(48)
  writeFileSync(path, secret, { mode: 0o600 })
  return secret
}

/** JWT_SECRET, or the generated one: restarts keep sessions. */
export const loadJwtSecret = (config: { auth: { jwtSecret: string }; paths: { dataDir: string } }) =>
  loadSecret(config.auth.jwtSecret, config.paths.dataDir, 'jwt-secret')

/** VARIANT_SECRET, or the generated one: restarts keep signed variant URLs valid. */
export const loadVariantSecret = (config: { variants: { secret: string }; paths: { dataDir: string } }) =>
  loadSecret(config.variants.secret, config.paths.dataDir, 'variant-secret')

/** TOTP_KEY, or the generated one: the key TOTP secrets are sealed with at rest (a database copy alone reveals none). */
export const loadTotpKey = (config: { auth: { totpKey: string }; paths: { dataDir: string } }) =>
  loadSecret(config.auth.totpKey, config.paths.dataDir, 'totp-key')
