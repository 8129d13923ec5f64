import { Elysia, t } from 'elysia'
import type { Config } from '../../config'
import { notFound } from '../../errors'
import { clientIp } from '../../http/client-ip'
import { type Encoding, negotiatedResponse } from '../../http/compression'
import { errors, HttpError, NOSNIFF } from '../../http/errors'
import { createPageRenderer, getAsset } from '../../web/page'
import type { AlbumService } from '../albums/service'
import type { GalleryService } from '../gallery/service'
import { DELETE_PAGE_PATH } from '../images/links'
import type { ImageService } from '../images/service'
import {
  renderDashboard,
  renderForgot,
  renderLogin,
  renderLogout,
  renderRegister,
  renderReset,
  renderVerify,
} from './account'
import { renderAdminBlocks } from './admin-blocks'
import { renderAdminReports } from './admin-reports'
import { ALBUM_PAGE_SIZE, renderAlbum, renderAlbumPassword } from './album'
import { deleteFromPage, renderDeletePage } from './delete'
import { renderGallery, renderProfile } from './feeds'
import { asOfParam, pageParam } from './grid'
import { OEmbedQuery, OEmbedResponse } from './model'
import { oembedFor } from './oembed'
import type { PageService } from './service'
import { renderUploadPage } from './upload'
import { renderViewer } from './viewer'

const hidden = { detail: { hide: true } }

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
  const { config, pages, images, albums, gallery, robotsTxt } = deps
  const renderer = createPageRenderer(config)

  async function albumPage(id: string, at: { page: string | undefined; password: string | undefined; ip: string }) {
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
      config,
      {
        images,
        albumUrl: albums.albumUrl(album.id),
        owner: await pages.ownerName(album.userId),
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

  return new Elysia({ name: 'module-pages' })
    .use(clientIp(config.trustProxy))
    .get(
      '/assets/:name',
      ({ params, query, request }) => {
        const asset = getAsset(params.name)
        if (!asset) throw notFound()
        // Scripts and styles go out compressed (about a quarter of their size) to clients that accept gzip.
        const body = {
          identity: asset.bytes,
          tag: asset.hash,
          coded: (e: Encoding) => (e === 'gzip' ? asset.gzip : null),
        }
        return negotiatedResponse(request, body, {
          'content-type': asset.type,
          // A versioned URL never changes content; an unversioned one is revalidated.
          'cache-control': query.v === asset.hash ? 'public, max-age=31536000, immutable' : 'no-cache',
          'x-content-type-options': 'nosniff',
        })
      },
      { params: t.Object({ name: t.String() }), query: t.Object({ v: t.Optional(t.String()) }), ...hidden },
    )
    .get(
      '/robots.txt',
      () =>
        new Response(robotsTxt, {
          headers: { 'content-type': 'text/plain; charset=utf-8', ...NOSNIFF },
        }),
      hidden,
    )
    .get('/', () => renderUploadPage(renderer, config), hidden)
    .get(
      '/gallery',
      ({ query }) => {
        const page = pageParam(query.page)
        const asOf = asOfParam(query.asOf)
        if (page === null || asOf === null) return renderer.notFound('There is no such page of the gallery.')
        return renderGallery(renderer, config, { gallery, pages }, { page, q: (query.q ?? '').trim(), asOf })
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
        return renderProfile(renderer, config, { gallery, pages }, params.username, { page, asOf })
      },
      {
        params: t.Object({ username: t.String() }),
        query: t.Object({ page: t.Optional(t.String()), asOf: t.Optional(t.String()) }),
        ...hidden,
      },
    )
    .get('/login', ({ query }) => renderLogin(renderer, config, query.next), {
      query: t.Object({ next: t.Optional(t.String()) }),
      ...hidden,
    })
    .get('/register', () => renderRegister(renderer, config), hidden)
    .get('/verify', () => renderVerify(renderer, config), hidden)
    .get('/forgot', () => renderForgot(renderer, config), hidden)
    .get('/reset', () => renderReset(renderer, config), hidden)
    .get('/logout', () => renderLogout(renderer, config), hidden)
    .get('/dashboard', () => renderDashboard(renderer, config), hidden)
    .get('/admin/reports', () => renderAdminReports(renderer, config), hidden)
    .get('/admin/blocks', () => renderAdminBlocks(renderer, config), hidden)
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
        albumPage(params.id, { page: query.page, password: query.password || undefined, ip: clientIp }),
      {
        params: t.Object({ id: t.String() }),
        query: t.Object({ password: t.Optional(t.String()), page: t.Optional(t.String()) }),
        ...hidden,
      },
    )
    .post(
      '/a/:id',
      ({ params, query, body, clientIp }) =>
        albumPage(params.id, { page: query.page, password: formField(body, 'password'), ip: clientIp }),
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
