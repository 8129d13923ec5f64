import { and, asc, count, desc, eq, gt, inArray, isNull, type SQL, sql } from 'drizzle-orm'
import { type Db, q, type Step, type Tx, transaction } from '../../db/client'
import { insertionOrder } from '../../db/order'
import { type Album, albumImages, albums, type Image, type User } from '../../db/schema'
import { newPublicId } from '../../lib/crypto'
import { expiredImage, liveImage } from '../images/live'
import { imageJoin } from '../images/repository'

/**
 * Every query of the albums and album_images tables, and of an album's images, which it reads through the images
 * repository's imageJoin.
 */

/**
 * An album's memberships, the most recently added first. Insertion order breaks ties between images added in the same
 * millisecond (a batch upload into a folder).
 */
const newestAddedFirst = [desc(albumImages.addedAt), desc(insertionOrder(albumImages))]

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

/** An album's live images as `audience` may see them (the owner all, others only public ones). */
const inAlbum = (albumId: string, audience: 'owner' | 'public', now: number): SQL =>
  and(
    eq(albumImages.albumId, albumId),
    liveImage(now),
    audience === 'owner' ? undefined : eq(imageJoin.visibility, 'public'),
  )!

/** Images of an album at `now`, the most recently added first: all of them, or one page. */
export async function albumImagesOf(
  db: Db,
  albumId: string,
  audience: 'owner' | 'public',
  now: number,
  page?: { limit: number; offset: number },
): Promise<Image[]> {
  const query = db
    .select({ image: imageJoin.table })
    .from(albumImages)
    .innerJoin(imageJoin.table, eq(imageJoin.id, albumImages.imageId))
    .where(inAlbum(albumId, audience, now))
    .orderBy(...newestAddedFirst)
    .$dynamic()
  const rows = await (page ? query.limit(page.limit).offset(page.offset) : query)
  return rows.map((r) => r.image)
}

/** An album as its counts read it (albums.image_count, public_count; its images are its owner's). */
export type CountedAlbum = { id: string; userId: number; imageCount: number; publicCount: number }

/**
 * How many images of each of one owner's albums the audience sees, and the most recently added one (the cover): the
 * albums' counts (kept by triggers, migrations/0016_album_counts_triggers.sql) less their expired images not swept yet
 * (the owner's, found through images_user_expires, then their memberships: one query for every album), and the newest
 * membership each may see (through album_images_added).
 */
export async function albumStats(db: Db, ownerAlbums: CountedAlbum[], audience: 'owner' | 'public', now: number) {
  const owners = [...new Set(ownerAlbums.map((a) => a.userId))]
  if (ownerAlbums.length === 0) return []
  const expired = await db
    .select({ album: albumImages.albumId, n: count() })
    .from(imageJoin.table)
    .innerJoin(albumImages, eq(albumImages.imageId, imageJoin.id))
    .where(
      and(
        inArray(imageJoin.userId, owners),
        expiredImage(now),
        audience === 'owner' ? undefined : eq(imageJoin.visibility, 'public'),
        inArray(
          albumImages.albumId,
          ownerAlbums.map((a) => a.id),
        ),
      ),
    )
    .groupBy(albumImages.albumId)
  const gone = new Map(expired.map((e) => [e.album, e.n]))
  return await Promise.all(
    ownerAlbums.map(async (album) => {
      const [cover] = await db
        .select({ id: imageJoin.id, ext: imageJoin.ext })
        .from(albumImages)
        .innerJoin(imageJoin.table, eq(imageJoin.id, albumImages.imageId))
        .where(inAlbum(album.id, audience, now))
        .orderBy(...newestAddedFirst)
        .limit(1)
      const counted = audience === 'owner' ? album.imageCount : album.publicCount
      return { imageCount: counted - (gone.get(album.id) ?? 0), cover }
    }),
  )
}

/** Albums recounted per transaction. */
const ALBUM_BATCH = 200

/**
 * Recounts every album's image counts (albums.image_count and public_count, kept by triggers) from its memberships,
 * a batch of albums at a time by id; with `repair`, what differs is rewritten. Returns how many albums were wrong.
 */
export async function recountAlbumCounts(db: Db, opts: { repair: boolean }): Promise<number> {
  let wrong = 0
  for (let after = ''; ; ) {
    const batch = await transaction(db, function* (tx) {
      const kept = yield* q(
        tx
          .select({ id: albums.id, images: albums.imageCount, public: albums.publicCount })
          .from(albums)
          .where(gt(albums.id, after))
          .orderBy(asc(albums.id))
          .limit(ALBUM_BATCH),
      )
      if (kept.length === 0) return kept
      const counted = yield* q(
        tx
          .select({
            id: albumImages.albumId,
            images: sql<number>`count(*)`.mapWith(Number),
            public: sql<number>`sum(CASE WHEN ${imageJoin.visibility} = 'public' THEN 1 ELSE 0 END)`.mapWith(Number),
          })
          .from(albumImages)
          .innerJoin(imageJoin.table, eq(imageJoin.id, albumImages.imageId))
          .where(
            inArray(
              albumImages.albumId,
              kept.map((a) => a.id),
            ),
          )
          .groupBy(albumImages.albumId),
      )
      const truth = new Map(counted.map((c) => [c.id, c]))
      for (const album of kept) {
        const want = truth.get(album.id) ?? { images: 0, public: 0 }
        if (album.images === want.images && album.public === want.public) continue
        wrong++
        if (opts.repair)
          yield* q(
            tx.update(albums).set({ imageCount: want.images, publicCount: want.public }).where(eq(albums.id, album.id)),
          )
      }
      return kept
    })
    if (batch.length < ALBUM_BATCH) return wrong
    after = batch.at(-1)!.id
  }
}
