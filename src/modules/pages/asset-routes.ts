import { Elysia, t } from 'elysia'
import { notFound } from '../../errors'
import { type Encoding, negotiatedResponse } from '../../http/compression'
import { NOSNIFF } from '../../http/errors'
import { getAsset } from '../../web/page'
import { hidden } from './model'

/** The pages' local assets (scripts, styles, icons) and /robots.txt (`robotsTxt`: ROBOTS_TXT's, or the default). */
export function assetRoutes(robotsTxt: string) {
  return new Elysia({ name: 'module-pages-assets' })
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
}
