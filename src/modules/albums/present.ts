import type { Album, Image } from '../../db/schema'
import { iso } from '../../lib/time'
import type { ListReads } from '../images/list-reads'
import { IMAGE_SHAPES } from '../images/model'
import type { ImageService } from '../images/service'
import { pickImage } from '../images/view'

/** Who is looking: the owner sees everything; anyone else only public images of a public album. */
export type Audience = 'owner' | 'public'

export type AlbumPresenter = ReturnType<typeof createPresenter>

/** An album as the API and the pages show it: its object, its counts and cover, its images. */
export function createPresenter(deps: { reads: ListReads; images: ImageService; albumUrl: (id: string) => string }) {
  const { reads, images: imageService } = deps

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
      url: deps.albumUrl(album.id),
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

  return { imagesOf, statsOf, shape, present, imageItem }
}
