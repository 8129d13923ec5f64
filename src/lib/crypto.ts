import { createCipheriv, createDecipheriv, createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** Random `[A-Za-z0-9]` string from a CSPRNG (ids and secrets must not be guessable). */
export function randomAlphanumeric(length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]
  return out
}

/** 8-character public id for images and albums. */
export const newPublicId = () => randomAlphanumeric(8)

export const randomToken = (bytes = 32) => randomBytes(bytes).toString('base64url')

export function sha256Hex(value: string | Uint8Array): string {
  return new Bun.CryptoHasher('sha256').update(value).digest('hex')
}

/**
 * Constant-time comparison of two secrets (or their hashes). Both sides are hashed first, so the inputs compared are
 * always 32 bytes: neither the content nor the length of the expected secret shows in the timing.
 */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest())
}

const SEAL_IV_BYTES = 12
const SEAL_TAG_BYTES = 16

/** Encrypts `plain` with AES-256-GCM under a key derived from `key` (any string); the result is base64url. */
export function seal(key: string, plain: string): string {
  const iv = randomBytes(SEAL_IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(key).digest(), iv)
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')
}

/** The text `seal` encrypted; throws when the key is not the one it was sealed with or the text was changed. */
export function unseal(key: string, sealed: string): string {
  const bytes = Buffer.from(sealed, 'base64url')
  const decipher = createDecipheriv(
    'aes-256-gcm',
    createHash('sha256').update(key).digest(),
    bytes.subarray(0, SEAL_IV_BYTES),
  )
  decipher.setAuthTag(bytes.subarray(SEAL_IV_BYTES, SEAL_IV_BYTES + SEAL_TAG_BYTES))
  return Buffer.concat([decipher.update(bytes.subarray(SEAL_IV_BYTES + SEAL_TAG_BYTES)), decipher.final()]).toString(
    'utf8',
  )
}
