import { and, eq, isNull } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { albums, type User } from '../../db/schema'
import { newPublicId } from '../../lib/crypto'

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/**
 * Upload's `album`/`folder`: an id of one of the caller's albums selects it; any other value names a folder,
 * the caller's live album with exactly that title, created on first use with the upload's visibility.
 */
export function resolveUploadAlbum(tx: Tx, owner: User, value: string, isPublic: boolean): string {
  const live = and(eq(albums.userId, owner.id), isNull(albums.deletedAt))
  const byId = tx.select({ id: albums.id }).from(albums).where(and(live, eq(albums.id, value))).get()
  if (byId) return byId.id
  const byTitle = tx.select({ id: albums.id }).from(albums).where(and(live, eq(albums.title, value))).get()
  if (byTitle) return byTitle.id
  return tx.insert(albums).values({ id: newPublicId(), userId: owner.id, title: value, isPublic }).returning({ id: albums.id }).get().id
}
