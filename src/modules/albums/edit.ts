import { type Db, run, type Tx, transaction } from '../../db/client'
import type { Album, User } from '../../db/schema'
import { badRequest, notFound } from '../../errors'
import { newPublicId } from '../../lib/crypto'
import { isImageId } from '../images/model'
import { ownedLiveIds } from '../images/repository'
import type { ImageService } from '../images/service'
import { DESCRIPTION_MAX, PASSWORD_MAX, TITLE_MAX } from './model'
import type { AlbumPresenter } from './present'
import { addAlbumImage, insertAlbum, removeAlbumImage, setAlbumFields, updateAlbum } from './repository'

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

const touch = (tx: Tx, id: string) => setAlbumFields(tx, id, { updatedAt: new Date() })

/** The owner's changes: making, changing and deleting albums, adding and removing their images. */
export function createAlbumEdits(deps: {
  db: Db
  images: ImageService
  findOwned: (user: User, id: string) => Promise<Album>
  present: AlbumPresenter['present']
}) {
  const { db, images: imageService, findOwned, present } = deps
  return {
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
