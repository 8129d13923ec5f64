import type { Config } from '../../config'
import { type Db, run, type Tx, transaction } from '../../db/client'
import type { Album, Image, User } from '../../db/schema'
import { badRequest, forbidden, notFound, RateLimited } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { newPublicId } from '../../lib/crypto'
import { iso } from '../../lib/time'
import { guessWindow, refundAttempt, takeAttempt, type WindowRule } from '../../limits/windows'
import type { ListReads } from '../images/list-reads'
import { IMAGE_SHAPES, isImageId } from '../images/model'
import { ownedLiveIds } from '../images/repository'
import type { ImageService } from '../images/service'
import { pickImage } from '../images/view'
import { albumPath, DESCRIPTION_MAX, isAlbumId, PASSWORD_MAX, TITLE_MAX } from './model'
import {
  addAlbumImage,
  albumsOf,
  findLiveAlbum,
  insertAlbum,
  removeAlbumImage,
  setAlbumFields,
  updateAlbum,
} from './repository'

/**
 * Album passwords are shared secrets handed out with a link, checked on every visit of a protected album:
 * argon2id with OWASP's minimum parameters keeps them hashed without letting visitors pin 64 MiB per request.
 */
const PASSWORD_HASH = { algorithm: 'argon2id', memoryCost: 19456, timeCost: 2 } as const

export interface AlbumInput {
  title?: string
  description?: string | null
  isPublic?: boolean
  password?: string | null
}

/** Who is looking: the owner sees everything; anyone else only public images of a public album. */
type Audience = 'owner' | 'public'

/** The outcome of opening an album as someone; the API turns it into statuses, the album page into HTML. */
export type AlbumAccess =
  | { kind: 'ok'; album: Album; audience: Audience }
  | { kind: 'not-found' }
  | { kind: 'password'; album: Album; wrong: boolean }
  /** Too many wrong passwords for this album or from this address: the 429 to answer, with its headers. */
  | { kind: 'throttled'; album: Album; error: RateLimited }

export type AlbumService = ReturnType<typeof createAlbumService>

function checkTitle(raw: string): string {
  const title = raw.trim()
  if (title.length < 1 || title.length > TITLE_MAX) throw badRequest(`title must be 1-${TITLE_MAX} characters`)
  return title
}

function checkDescription(raw: string | null): string {
  const description = (raw ?? '').trim()
  if (description.length > DESCRIPTION_MAX)
    throw badRequest(`description must be at most ${DESCRIPTION_MAX} characters`)
  return description
}

export function createAlbumService(deps: {
  db: Db
  images: ImageService
  /** Where albums' images and counts are read (images/reads.ts: a Worker on SQLite). */
  reads: ListReads
  publicUrl: string
  guesses: Config['limits']['guesses']
  /** The password-guess windows' clock (tests step it). */
  now?: () => number
}) {
  const { db, images: imageService, guesses, reads } = deps
  const windowNow = deps.now ?? Date.now
  /** `{base_url}/a/<id>`, the album page. */
  const albumUrl = (id: string) => `${deps.publicUrl}${albumPath(id)}`

  async function findLive(id: string): Promise<Album | undefined> {
    if (!isAlbumId(id)) return undefined
    return findLiveAlbum(db, id)
  }

  /** The caller's live album, else 404 (someone else's album is indistinguishable from a missing one). */
  async function findOwned(user: User, id: string): Promise<Album> {
    const album = await findLive(id)
    if (!album || album.userId !== user.id) throw notFound('Album not found')
    return album
  }

  /** Images of an album the audience sees, the most recently added first: all of them, or one page. */
  function imagesOf(album: Album, audience: Audience, page?: { limit: number; offset: number }): Promise<Image[]> {
    return reads.album(album.id, audience, imageService.now(), page)
  }

  /** How many images of each album the audience sees, and its cover's thumbnail link. */
  async function statsOf(albums: Album[], audience: Audience) {
    const counted = albums.map(({ id, userId, imageCount, publicCount }) => ({ id, userId, imageCount, publicCount }))
    const stats = await reads.albumStats(counted, audience, imageService.now())
    return stats.map(({ imageCount, cover }) => ({
      imageCount,
      cover: cover ? imageService.links(cover).thumbnail : null,
    }))
  }

  /**
   * The Album object. `imageCount` and `cover` count what the audience may see: others never learn of private
   * images, not even through the cover.
   */
  function shape(album: Album, stats: { imageCount: number; cover: string | null }) {
    return {
      id: album.id,
      title: album.title,
      description: album.description,
      isPublic: album.isPublic,
      hasPassword: album.passwordHash !== null,
      imageCount: stats.imageCount,
      cover: stats.cover,
      url: albumUrl(album.id),
      createdAt: iso(album.createdAt),
      updatedAt: iso(album.updatedAt),
    }
  }

  /** The Album object; with `known`, the images the audience sees (already read), else the counts. */
  async function present(album: Album, audience: Audience, known?: Image[]) {
    if (known)
      return shape(album, { imageCount: known.length, cover: known[0] ? imageService.links(known[0]).thumbnail : null })
    return shape(album, (await statsOf([album], audience))[0]!)
  }

  function imageItem(image: Image) {
    return pickImage(imageService.fields(image), IMAGE_SHAPES.albumItem)
  }

  /** Password guesses for an album, counted per album (across addresses) and per address. */
  function guessWindows(album: Album, ip: string): WindowRule[] {
    const window = (key: string, limit: number, message: string) => guessWindow(guesses, key, limit, message)
    return [
      window(`album-password:${album.id}`, guesses.albumPerAlbum, 'Too many wrong passwords for this album'),
      window(`album-password-ip:${ipKey(ip)}`, guesses.albumPerIp, 'Too many wrong album passwords from this address'),
    ]
  }

  /**
   * Opens an album as `caller` (null: anonymous) from `ip`, with the password they gave, if any. Password guesses are
   * throttled before the hash is verified, so a refused guess costs no hashing; a right password is not counted.
   */
  async function access(
    caller: User | null,
    id: string,
    password: string | undefined,
    ip: string,
  ): Promise<AlbumAccess> {
    const album = await findLive(id)
    if (!album) return { kind: 'not-found' }
    if (caller && caller.id === album.userId) return { kind: 'ok', album, audience: 'owner' }
    if (!album.isPublic) return { kind: 'not-found' }
    if (album.passwordHash !== null) {
      if (!password) return { kind: 'password', album, wrong: false }
      const windows = guessWindows(album, ip)
      const at = windowNow()
      try {
        await takeAttempt(db, windows, at)
      } catch (error) {
        if (error instanceof RateLimited) return { kind: 'throttled', album, error }
        throw error
      }
      const ok = await Bun.password.verify(password, album.passwordHash).catch(() => false)
      if (!ok) return { kind: 'password', album, wrong: true }
      await refundAttempt(db, windows, at)
    }
    return { kind: 'ok', album, audience: 'public' }
  }

  const touch = (tx: Tx, id: string) => setAlbumFields(tx, id, { updatedAt: new Date() })

  return {
    findLive,
    findOwned,
    access,
    imagesOf,
    present,
    imageItem,
    albumUrl,

    async list(user: User) {
      const albums = await albumsOf(db, user.id)
      const stats = await statsOf(albums, 'owner')
      return albums.map((album, i) => shape(album, stats[i]!))
    },

    async create(user: User, input: { title: string; description?: string | null; isPublic?: boolean }) {
      const album = await run(
        insertAlbum(db, {
          id: newPublicId(),
          userId: user.id,
          title: checkTitle(input.title),
          description: checkDescription(input.description ?? null),
          isPublic: input.isPublic ?? false,
        }),
      )
      return present(album, 'owner', [])
    },

    /**
     * The API view: the owner sees it whole; others get 404 (private or deleted), 403 (password missing or wrong) or
     * 429 (too many wrong passwords).
     */
    async view(caller: User | null, id: string, password: string | undefined, ip: string) {
      const result = await access(caller, id, password, ip)
      if (result.kind === 'not-found') throw notFound('Album not found')
      if (result.kind === 'throttled') throw result.error
      if (result.kind === 'password') {
        throw forbidden(
          result.wrong ? 'Wrong album password' : 'This album is password protected: send X-Album-Password',
        )
      }
      const images = await imagesOf(result.album, result.audience)
      return {
        success: true as const,
        album: await present(result.album, result.audience, images),
        images: images.map(imageItem),
      }
    },

    async update(user: User, id: string, input: AlbumInput) {
      const set: Partial<Album> = {}
      if (input.title !== undefined) set.title = checkTitle(input.title)
      if (input.description !== undefined) set.description = checkDescription(input.description)
      if (input.isPublic !== undefined) set.isPublic = input.isPublic
      if (input.password !== undefined) {
        if (input.password === null || input.password === '') set.passwordHash = null
        else if (input.password.length > PASSWORD_MAX)
          throw badRequest(`password must be at most ${PASSWORD_MAX} characters`)
        else set.passwordHash = await Bun.password.hash(input.password, PASSWORD_HASH)
      }
      if (Object.keys(set).length === 0)
        throw badRequest('Supply at least one of title, description, isPublic, password')
      const album = await findOwned(user, id)
      const updated = await run(updateAlbum(db, album.id, { ...set, updatedAt: new Date() }))
      return present(updated, 'owner')
    },

    /** Soft delete: the images stay; the album leaves every listing and is 404 to everyone, its owner included. */
    async remove(user: User, id: string) {
      const album = await findOwned(user, id)
      await run(setAlbumFields(db, album.id, { deletedAt: new Date() }))
    },

    /** Adds one of the caller's images; adding it again changes nothing. */
    async addImage(user: User, albumId: string, imageId: string) {
      const album = await findOwned(user, albumId)
      const image = await imageService.findOwned(user, imageId)
      await transaction(db, function* (tx) {
        // Deleted since it was found (a concurrent delete): 404, not a reference to a row that is gone.
        if ((yield* ownedLiveIds(tx, user.id, [image.id])).length === 0) throw notFound('Image not found')
        if (yield* addAlbumImage(tx, album.id, image.id)) yield* touch(tx, album.id)
      })
      return present(await findOwned(user, album.id), 'owner')
    },

    async removeImage(user: User, albumId: string, imageId: string) {
      const album = await findOwned(user, albumId)
      if (!isImageId(imageId)) throw notFound('Image not in album')
      await transaction(db, function* (tx) {
        if (!(yield* removeAlbumImage(tx, album.id, imageId))) throw notFound('Image not in album')
        yield* touch(tx, album.id)
      })
    },
  }
}
