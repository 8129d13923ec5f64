import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'

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
