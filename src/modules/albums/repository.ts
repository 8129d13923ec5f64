import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm'
import type { Db, Tx } from '../../db/client'
import { type Album, albumImages, albums, type User } from '../../db/schema'
import { newPublicId } from '../../lib/crypto'

/** Every query of the albums and album_images tables. */

/**
 * What the images repository's "images of an album" queries join (they read images, which albums never do): an
 * album's memberships by image id. Insertion order breaks ties between images added in the same millisecond (a batch
 * upload into a folder).
 */
export const membership = {
  table: albumImages,
  imageId: albumImages.imageId,
  of: (albumId: string) => eq(albumImages.albumId, albumId),
  newestAddedFirst: [desc(albumImages.addedAt), desc(sql`"album_images"."rowid"`)],
}

const liveOf = (userId: number) => and(eq(albums.userId, userId), isNull(albums.deletedAt))

/** A live (not deleted) album by id. */
export const findLiveAlbum = (db: Db, id: string): Album | undefined =>
  db
    .select()
    .from(albums)
    .where(and(eq(albums.id, id), isNull(albums.deletedAt)))
    .get()

/** The user's live albums, newest first. */
export const albumsOf = (db: Db, userId: number): Album[] =>
  db.select().from(albums).where(liveOf(userId)).orderBy(desc(albums.createdAt), desc(albums.id)).all()

export const insertAlbum = (db: Db | Tx, values: typeof albums.$inferInsert): Album =>
  db.insert(albums).values(values).returning().get()

export const updateAlbum = (db: Db | Tx, id: string, set: Partial<Album>): Album =>
  db.update(albums).set(set).where(eq(albums.id, id)).returning().get()!

/** As updateAlbum, without reading the row back. */
export const setAlbumFields = (db: Db | Tx, id: string, set: Partial<Album>) =>
  db.update(albums).set(set).where(eq(albums.id, id)).run()

/**
 * Upload's `album`/`folder`: an id of one of the caller's albums selects it; any other value names a folder,
 * the caller's live album with exactly that title, created on first use with the upload's visibility.
 * When several live albums share the title, the oldest one is used.
 */
export function resolveUploadAlbum(tx: Tx, owner: User, value: string, isPublic: boolean): string {
  const live = liveOf(owner.id)
  const byId = tx
    .select({ id: albums.id })
    .from(albums)
    .where(and(live, eq(albums.id, value)))
    .get()
  if (byId) return byId.id
  const byTitle = tx
    .select({ id: albums.id })
    .from(albums)
    .where(and(live, eq(albums.title, value)))
    .orderBy(asc(albums.createdAt))
    .get()
  if (byTitle) return byTitle.id
  return tx
    .insert(albums)
    .values({ id: newPublicId(), userId: owner.id, title: value, isPublic })
    .returning({ id: albums.id })
    .get().id
}

/** Puts images in an album (those already in it stay as they are); inside the transaction that stores them. */
export function addToAlbum(tx: Tx, albumId: string, imageIds: string[], addedAt: number) {
  tx.insert(albumImages)
    .values(imageIds.map((imageId) => ({ albumId, imageId, addedAt: new Date(addedAt) })))
    .onConflictDoNothing()
    .run()
}

/** Adds one image; returns whether it was not in the album yet. */
export const addAlbumImage = (tx: Tx, albumId: string, imageId: string): boolean =>
  tx.insert(albumImages).values({ albumId, imageId }).onConflictDoNothing().returning().all().length > 0

/** Removes one image; returns whether it was in the album. */
export const removeAlbumImage = (tx: Tx, albumId: string, imageId: string): boolean =>
  tx
    .delete(albumImages)
    .where(and(eq(albumImages.albumId, albumId), eq(albumImages.imageId, imageId)))
    .returning()
    .all().length > 0
