import { Elysia } from 'elysia'
import { notFound } from '../../errors'
import { imageLinks, type LinkBase } from '../images/links'
import type { ImageService } from '../images/service'
import { decodedPath, type LegacyRedirect } from './model'

/**
 * Links of a previous host kept working (LEGACY_REDIRECTS): `GET <old path>` answers 301 to the image's viewer page or
 * direct link. A wildcard route, which the router tries after every other route: a path one of ours owns is never
 * redirected. An unknown path, or an image no longer live, is the 404 of any unknown path.
 */
export function legacyLinksModule(deps: {
  redirects: ReadonlyMap<string, LegacyRedirect>
  images: Pick<ImageService, 'liveCache'>
  base: LinkBase
}) {
  const { redirects, images, base } = deps
  return new Elysia({ name: 'module-legacy-links' }).get(
    '/*',
    async ({ request }) => {
      const path = decodedPath(new URL(request.url).pathname)
      const entry = path === null ? undefined : redirects.get(path)
      const image = entry && (await images.liveCache.get(entry.id))
      if (!entry || !image) throw notFound()
      const links = imageLinks(base, image)
      return new Response(null, {
        status: 301,
        headers: { location: entry.target === 'direct' ? links.url : links.viewer },
      })
    },
    { detail: { hide: true } },
  )
}
