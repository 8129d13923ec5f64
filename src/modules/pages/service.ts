import type { Config } from '../../config'
import { type Db, run } from '../../db/client'
import type { EmbedProfile, Image } from '../../db/schema'
import { findAccountName } from '../auth/repository'
import { type ResolvedEmbed, resolveEmbed } from '../embeds/service'
import { VIEWER_PATH } from '../images/links'
import { IMAGE_ID, isImageId } from '../images/model'
import { imagePageRow, tileFactsOf } from '../images/repository'
import type { ImageService } from '../images/service'

/** Everything a viewer page or an oEmbed answer needs, read in one query. */
export interface ImagePageData {
  image: Image
  /** The uploader when there is one and it may be shown (null for anonymous uploads and banned accounts). */
  username: string | null
  profile: EmbedProfile | null
  embed: ResolvedEmbed
  links: ReturnType<ImageService['links']>
  /** The view count including views still buffered in memory (read once, on first use). */
  views: () => number
}

/** What follows VIEWER_PATH in a viewer link: an image id, perhaps with a trailing slash. */
const VIEWER_PATH_ID = new RegExp(`^(${IMAGE_ID})/?$`)

export type PageService = ReturnType<typeof createPageService>

export function createPageService(deps: { db: Db; config: Config; images: ImageService }) {
  const { db, config, images: imageService } = deps
  const base = new URL(config.site.publicUrl)
  const basePath = base.pathname.replace(/\/+$/, '')

  /**
   * A viewer page's data; `countView` counts this load first (unless `userAgent` is a crawler's), so the page shows a
   * count that includes it.
   */
  async function imagePage(
    id: string,
    opts: { countView?: boolean; userAgent?: string | null } = {},
  ): Promise<ImagePageData | null> {
    if (!isImageId(id)) return null
    // At the image service's time, so the page and its view count (details(), below) agree on what has expired.
    const row = await imagePageRow(db, id, imageService.now())
    if (!row) return null
    if (opts.countView) imageService.countView(id, opts.userAgent)
    const username = row.username && !row.banned ? row.username : null
    // details() adds the views still buffered in memory, so the count is current.
    const count = (await imageService.details(id)).views
    const views = () => count
    const embed = resolveEmbed(row.image, row.profile, {
      siteName: config.site.name,
      siteColor: config.site.color,
      username: row.username,
      views,
    })
    const links = imageService.links(row.image)
    const { image } = row
    return { image, username, profile: row.profile, embed, links, views }
  }

  /** The image id of one of our viewer links (`{base_url}/i/<id>`), or null for anything else. */
  function viewerLinkId(link: string): string | null {
    let url: URL
    try {
      url = new URL(link)
    } catch {
      return null
    }
    if (url.origin !== base.origin || !url.pathname.startsWith(`${basePath}${VIEWER_PATH}`)) return null
    const match = VIEWER_PATH_ID.exec(url.pathname.slice(basePath.length + VIEWER_PATH.length))
    return match ? match[1] : null
  }

  /** The uploader's name for a page, or null when anonymous or banned. */
  async function ownerName(userId: number | null): Promise<string | null> {
    if (userId === null) return null
    const owner = await run(findAccountName(db, userId))
    return owner && !owner.banned ? owner.username : null
  }

  /**
   * What feed tiles need beyond the feed elements, by image id: the original filename (their alt text) and what the
   * image's sizes cost (which presets a tile may link).
   */
  async function tileFacts(ids: string[]): Promise<Awaited<ReturnType<typeof tileFactsOf>>> {
    if (ids.length === 0) return new Map()
    return tileFactsOf(db, ids)
  }

  return { imagePage, viewerLinkId, ownerName, tileFacts }
}
