import { Elysia } from 'elysia'
import type { Config } from '../../config'
import { clientIp } from '../../http/client-ip'
import { createPageRenderer } from '../../web/page'
import type { AlbumService } from '../albums/service'
import type { GalleryService } from '../gallery/service'
import type { ImageService } from '../images/service'
import { accountPageRoutes } from './account-routes'
import { assetRoutes } from './asset-routes'
import { feedRoutes } from './feed-routes'
import { linkRoutes } from './link-routes'
import type { PageService } from './service'

/**
 * Server-rendered pages (upload, gallery, profile, viewer, album, account pages, dashboard, 404), their local assets,
 * /robots.txt and the oEmbed endpoint the viewer page links to.
 */
export function pagesModule(deps: {
  config: Config
  pages: PageService
  images: ImageService
  albums: AlbumService
  gallery: GalleryService
  /** The robots.txt to answer (ROBOTS_TXT's, or the default). */
  robotsTxt: string
}) {
  const { config, pages, images, albums, gallery } = deps
  const renderer = createPageRenderer(config)
  return new Elysia({ name: 'module-pages' })
    .use(clientIp(config.http.trustProxy))
    .use(assetRoutes(deps.robotsTxt))
    .use(feedRoutes(renderer, config, { gallery, pages }))
    .use(accountPageRoutes(renderer, config))
    .use(linkRoutes({ renderer, config, pages, images, albums }))
}
