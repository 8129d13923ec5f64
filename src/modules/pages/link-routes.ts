import { Elysia, t } from 'elysia'
import type { Config } from '../../config'
import { notFound } from '../../errors'
import { clientIp } from '../../http/client-ip'
import { errors, HttpError } from '../../http/errors'
import type { PageRenderer } from '../../web/page'
import type { AlbumService } from '../albums/service'
import { DELETE_PAGE_PATH } from '../images/links'
import type { ImageService } from '../images/service'
import { ALBUM_PAGE_SIZE, renderAlbum, renderAlbumPassword } from './album'
import { deleteFromPage, renderDeletePage } from './delete'
import { pageParam } from './grid'
import { hidden, OEmbedQuery, OEmbedResponse } from './model'
import { oembedFor } from './oembed'
import type { PageService } from './service'
import { renderViewer } from './viewer'

interface LinkPageDeps {
  renderer: PageRenderer
  config: Config
  pages: PageService
  images: ImageService
  albums: AlbumService
}

async function albumPage(
  deps: LinkPageDeps,
  id: string,
  at: { page: string | undefined; password: string | undefined; ip: string },
) {
  const { renderer, albums } = deps
  const pageNumber = pageParam(at.page)
  const result = await albums.access(null, id, at.password, at.ip)
  if (result.kind === 'not-found' || pageNumber === null)
    return renderer.notFound('This album does not exist, is private, or was deleted.')
  if (result.kind === 'password') return renderAlbumPassword(renderer, result.album, result.wrong ? 'wrong' : 'ask')
  if (result.kind === 'throttled') return renderAlbumPassword(renderer, result.album, result.error)
  const { album, audience } = result
  const { imageCount } = await albums.present(album, audience)
  const totalPages = Math.ceil(imageCount / ALBUM_PAGE_SIZE)
  if (pageNumber > 1 && pageNumber > totalPages) return renderer.notFound('There is no such page of this album.')
  const shown = await albums.imagesOf(album, audience, {
    limit: ALBUM_PAGE_SIZE,
    offset: (pageNumber - 1) * ALBUM_PAGE_SIZE,
  })
  return renderAlbum(
    renderer,
    deps.config,
    {
      images: deps.images,
      albumUrl: albums.albumUrl(album.id),
      owner: await deps.pages.ownerName(album.userId),
      protectedView: album.passwordHash !== null,
      password: at.password,
    },
    album,
    { images: shown, total: imageCount, page: pageNumber, totalPages },
  )
}

/** A text field of a page form's body (src/http/body-limit.ts reads forms as objects of text fields). */
const formField = (body: unknown, name: string) => {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined
  return typeof value === 'string' ? value : undefined
}

/** The pages the links handed out open: an image's viewer, an album, a delete link; and a viewer link's oEmbed. */
export function linkRoutes(deps: LinkPageDeps) {
  const { renderer, config, pages, images } = deps
  return new Elysia({ name: 'module-pages-links' })
    .use(clientIp(config.http.trustProxy))
    .get(
      '/i/:id',
      async ({ params, request }) => {
        const data = await pages.imagePage(params.id, {
          countView: request.method === 'GET',
          userAgent: request.headers.get('user-agent'),
        })
        if (!data) return renderer.notFound('This image does not exist, or it was deleted.')
        return renderViewer(renderer, config, data)
      },
      { params: t.Object({ id: t.String() }), ...hidden },
    )
    .get(
      '/a/:id',
      ({ params, query, clientIp }) =>
        albumPage(deps, params.id, { page: query.page, password: query.password || undefined, ip: clientIp }),
      {
        params: t.Object({ id: t.String() }),
        query: t.Object({ password: t.Optional(t.String()), page: t.Optional(t.String()) }),
        ...hidden,
      },
    )
    .post(
      '/a/:id',
      ({ params, query, body, clientIp }) =>
        albumPage(deps, params.id, { page: query.page, password: formField(body, 'password'), ip: clientIp }),
      {
        params: t.Object({ id: t.String() }),
        query: t.Object({ page: t.Optional(t.String()) }),
        ...hidden,
      },
    )
    .get(
      `${DELETE_PAGE_PATH}:id/:token`,
      ({ params }) => renderDeletePage(renderer, config, images, params.id, params.token),
      {
        params: t.Object({ id: t.String(), token: t.String() }),
        ...hidden,
      },
    )
    .post(
      `${DELETE_PAGE_PATH}:id`,
      ({ params, body }) => deleteFromPage(renderer, images, params.id, formField(body, 'token') ?? ''),
      { params: t.Object({ id: t.String() }), ...hidden },
    )
    .get(
      '/api/oembed',
      async ({ query }) => {
        if (query.format !== undefined && query.format !== 'json')
          throw new HttpError(501, 'Only format=json is supported')
        const id = pages.viewerLinkId(query.url)
        const data = id ? await pages.imagePage(id) : null
        if (!data) throw notFound('Not a viewer link of this site')
        return oembedFor(config, data)
      },
      {
        query: OEmbedQuery,
        response: { 200: OEmbedResponse, ...errors(400, 404, 501) },
        detail: {
          tags: ['Embed profiles'],
          summary: 'oEmbed for a viewer link (discovered from the <link rel="alternate"> of /i/<id>)',
          description:
            "A photo embed with the direct link and its size; title, author and provider follow the image's embed profile " +
            '(placeholders filled), else the defaults. NSFW images answer a link embed without the picture. ' +
            "Anything that is not one of this site's viewer links: 404.",
        },
      },
    )
}
