import type { Db } from '../../db/client'
import type { User } from '../../db/schema'
import { notFound, unauthorized } from '../../errors'
import { randomAlphanumeric, sha256Hex } from '../../lib/crypto'
import { assertActive } from './active'
import { deleteKey, findKeyOwner, insertKey, keysOf } from './repository'

/** What every secret starts with: anything else is refused before a lookup. */
const KEY_PREFIX = 'ihk_'
const KEY_RANDOM_LENGTH = 40

/**
 * An account's API keys: made, listed, deleted, and the account behind a secret. `uses` (key id -> time of the last
 * use) is the auth service's buffer (keyUser notes it, its flushUses writes it).
 */
export function apiKeys(db: Db, uses: Map<number, number>) {
  return {
    /** The user behind an API key secret; notes the key's use (lastUsedAt, written by flushUses). */
    async keyUser(secret: string) {
      if (!secret.startsWith(KEY_PREFIX)) throw unauthorized('Invalid API key')
      const row = await findKeyOwner(db, sha256Hex(secret))
      if (!row) throw unauthorized('Invalid API key')
      assertActive(row.user)
      uses.set(row.keyId, Date.now())
      return row.user
    },

    async listKeys(user: User) {
      const keys = await keysOf(db, user.id)
      // Uses not yet flushed count already.
      return keys.map((key) => (uses.has(key.id) ? { ...key, lastUsedAt: new Date(uses.get(key.id)!) } : key))
    },

    async createKey(user: User, name: string) {
      const secret = KEY_PREFIX + randomAlphanumeric(KEY_RANDOM_LENGTH)
      const key = await insertKey(db, {
        userId: user.id,
        name,
        prefix: secret.slice(0, 8),
        secretHash: sha256Hex(secret),
      })
      return { key, secret }
    },

    async deleteKey(user: User, id: number) {
      if (!(await deleteKey(db, id, user.id))) throw notFound('API key not found')
    },
  }
}
