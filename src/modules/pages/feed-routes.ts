import { Elysia, t } from 'elysia'
import type { Config } from '../../config'
import type { PageRenderer } from '../../web/page'
import type { GalleryService } from '../gallery/service'
import { renderGallery, renderProfile } from './feeds'
import { asOfParam, pageParam } from './grid'
import { hidden } from './model'
import type { PageService } from './service'
import { renderUploadPage } from './upload'

/** The front page (the upload form), the gallery and the profiles. */
export function feedRoutes(
  renderer: PageRenderer,
  config: Config,
  services: { gallery: GalleryService; pages: PageService },
) {
  return new Elysia({ name: 'module-pages-feeds' })
    .get('/', () => renderUploadPage(renderer, config), hidden)
    .get(
      '/gallery',
      ({ query }) => {
        const page = pageParam(query.page)
        const asOf = asOfParam(query.asOf)
        if (page === null || asOf === null) return renderer.notFound('There is no such page of the gallery.')
        return renderGallery(renderer, config, services, { page, q: (query.q ?? '').trim(), asOf })
      },
      {
        query: t.Object({ page: t.Optional(t.String()), q: t.Optional(t.String()), asOf: t.Optional(t.String()) }),
        ...hidden,
      },
    )
    .get(
      '/u/:username',
      ({ params, query }) => {
        const page = pageParam(query.page)
        const asOf = asOfParam(query.asOf)
        if (page === null || asOf === null) return renderer.notFound('There is no such page of this profile.')
        return renderProfile(renderer, config, services, params.username, { page, asOf })
      },
      {
        params: t.Object({ username: t.String() }),
        query: t.Object({ page: t.Optional(t.String()), asOf: t.Optional(t.String()) }),
        ...hidden,
      },
    )
}
