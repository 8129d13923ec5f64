import { and, asc, desc, eq, isNull } from 'drizzle-orm'
import { type Db, q, type Step, type Tx } from '../../db/client'
import { insertionOrder } from '../../db/order'
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
  albumId: albumImages.albumId,
  imageId: albumImages.imageId,
  of: (albumId: string) => eq(albumImages.albumId, albumId),
  newestAddedFirst: [desc(albumImages.addedAt), desc(insertionOrder(albumImages))],
}

/** An album's counts (kept by triggers), for the recount of `cli check` (images/counts.ts), which joins images. */
export const albumTallies = {
  table: albums,
  id: albums.id,
  imageCount: albums.imageCount,
  publicCount: albums.publicCount,
}

const liveOf = (userId: number) => and(eq(albums.userId, userId), isNull(albums.deletedAt))

/** A live (not deleted) album by id. */
export const findLiveAlbum = async (db: Db, id: string): Promise<Album | undefined> =>
  (
    await db
      .select()
      .from(albums)
      .where(and(eq(albums.id, id), isNull(albums.deletedAt)))
  )[0]

/** The user's live albums, newest first. */
export const albumsOf = async (db: Db, userId: number): Promise<Album[]> =>
  await db.select().from(albums).where(liveOf(userId)).orderBy(desc(albums.createdAt), desc(albums.id))

export function* insertAlbum(db: Db | Tx, values: typeof albums.$inferInsert): Step<Album> {
  return (yield* q(db.insert(albums).values(values).returning()))[0]
}

export function* updateAlbum(db: Db | Tx, id: string, set: Partial<Album>): Step<Album> {
  return (yield* q(db.update(albums).set(set).where(eq(albums.id, id)).returning()))[0]!
}

/** As updateAlbum, without reading the row back. */
export function* setAlbumFields(db: Db | Tx, id: string, set: Partial<Album>) {
  return yield* q(db.update(albums).set(set).where(eq(albums.id, id)))
}

/**
 * Upload's `album`/`folder`: an id of one of the caller's albums selects it; any other value names a folder,
 * the caller's live album with exactly that title, created on first use with the upload's visibility.
 * When several live albums share the title, the oldest one is used.
 */
export function* resolveUploadAlbum(tx: Tx, owner: User, value: string, isPublic: boolean): Step<string> {
  const live = liveOf(owner.id)
  const [byId] = yield* q(
    tx
      .select({ id: albums.id })
      .from(albums)
      .where(and(live, eq(albums.id, value))),
  )
  if (byId) return byId.id
  const [byTitle] = yield* q(
    tx
      .select({ id: albums.id })
      .from(albums)
      .where(and(live, eq(albums.title, value)))
      .orderBy(asc(albums.createdAt))
      .limit(1),
  )
  if (byTitle) return byTitle.id
  const [created] = yield* q(
    tx
      .insert(albums)
      .values({ id: newPublicId(), userId: owner.id, title: value, isPublic })
      .returning({ id: albums.id }),
  )
  return created!.id
}

/** Puts images in an album (those already in it stay as they are); inside the transaction that stores them. */
export function* addToAlbum(tx: Tx, albumId: string, imageIds: string[], addedAt: number): Step<void> {
  yield* q(
    tx
      .insert(albumImages)
      .values(imageIds.map((imageId) => ({ albumId, imageId, addedAt: new Date(addedAt) })))
      .onConflictDoNothing(),
  )
}

/** Adds one image; returns whether it was not in the album yet. */
export function* addAlbumImage(tx: Tx, albumId: string, imageId: string): Step<boolean> {
  return (yield* q(tx.insert(albumImages).values({ albumId, imageId }).onConflictDoNothing().returning())).length > 0
}

/** Removes one image; returns whether it was in the album. */
export function* removeAlbumImage(tx: Tx, albumId: string, imageId: string): Step<boolean> {
  return (
    (yield* q(
      tx
        .delete(albumImages)
        .where(and(eq(albumImages.albumId, albumId), eq(albumImages.imageId, imageId)))
        .returning(),
    )).length > 0
  )
}
