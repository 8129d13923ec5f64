import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { Album, User } from '../../db/schema'
import { forbidden, notFound } from '../../errors'
import type { ListReads } from '../images/list-reads'
import type { ImageService } from '../images/service'
import { openAlbum } from './access'
import { createAlbumEdits } from './edit'
import { albumPath, isAlbumId } from './model'
import { createPresenter } from './present'
import { albumsOf, findLiveAlbum } from './repository'

export type AlbumService = ReturnType<typeof createAlbumService>

/**
 * Albums: reading them (here), opening one as someone (access.ts), showing one (present.ts) and the owner's changes
 * (edit.ts).
 */
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
  const { db, images, guesses, reads } = deps
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

  const { imagesOf, statsOf, shape, present, imageItem } = createPresenter({ reads, images, albumUrl })
  const access = (caller: User | null, id: string, password: string | undefined, ip: string) =>
    openAlbum({ db, guesses, now: deps.now ?? Date.now, findLive }, caller, id, password, ip)
  const edits = createAlbumEdits({ db, images, findOwned, present })

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

    create: edits.create,

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

    update: edits.update,
    remove: edits.remove,
    addImage: edits.addImage,
    removeImage: edits.removeImage,
  }
}
