import type { Server } from 'bun'
import { ipKey, resolveClientIp } from '../../http/client-ip'
import type { GlobalRateLimit } from '../../http/rate-limit'
import type { VariantSpec } from '../../media'
import type { Storage, StorageKey } from '../../storage'
import type { LiveImage } from '../images/live-cache'
import { IMAGE_ID } from '../images/model'
import type { ImageService } from '../images/service'
import type { VariantService } from '../variants/service'
import { CUSTOM } from '../variants/signing'
import { FORMAT_MIME, type Preset, presetSpec, VARIANT_FORMATS } from '../variants/specs'
import type { Deliveries, ImageDeliveries } from './deliveries'
import type { HotFiles } from './hot-files'
import { delivery, notFound, notModified, serve } from './serve'

const VARIANT = new RegExp(`^(${IMAGE_ID})\\.(${VARIANT_FORMATS.join('|')})$`)

/** The handler of /cdn/<preset>/:file and /cdn/custom/:file; `deps` as cdnModule's (src/modules/cdn/index.ts). */
export function createVariantHandler(deps: {
  images: ImageService
  variants: VariantService
  variantsMade: Pick<GlobalRateLimit, 'admit'>
  trustProxy: boolean
  storage: Storage
  hot: HotFiles
  deliveries: ImageDeliveries
  redirect: boolean
}) {
  const { images, variants, storage, hot, deliveries, redirect } = deps

  /**
   * A preset or signed size: served from storage once made; the first request has it made (once, however many ask:
   * variants.ensure, which answers 422 at once for a size that will not be made), and a size made counts against the
   * client's cap. A 304 needs no variant: its ETag says which it is.
   */
  const variant = (request: Request, preset: Preset | typeof CUSTOM, file: string, server: Server<unknown> | null) => {
    const match = VARIANT.exec(file)
    if (!match) return notFound()
    const format = match[2] as VariantSpec['format']
    const found = images.liveCache.get(match[1])
    return found instanceof Promise
      ? found.then((image) => serveVariant(request, preset, file, server, image, format))
      : serveVariant(request, preset, file, server, found, format)
  }

  function serveVariant(
    request: Request,
    preset: Preset | typeof CUSTOM,
    file: string,
    server: Server<unknown> | null,
    image: LiveImage | undefined,
    format: VariantSpec['format'],
  ): Response | Promise<Response> {
    if (!image) return notFound()
    const all = deliveries.of(image)
    let spec: VariantSpec
    let signedUrl: string | undefined
    if (preset === CUSTOM) {
      const at = request.url.indexOf('?')
      signedUrl = at < 0 ? file : `${file}?${request.url.slice(at + 1)}`
      spec = all.signed?.get(signedUrl) ?? variants.verify(file, format, at < 0 ? '' : request.url.slice(at + 1))
    } else {
      // The medium WebP is the thumbnail made at upload, under its own link.
      if (preset === 'medium' && format === 'webp') return serve(request, storage, hot, deliveries.thumbnail(image))
      spec = presetSpec(preset, format)
    }
    const key = variants.keyOf(image.id, spec)
    // A key known to be stored is answered at once; otherwise the database is asked first.
    const stored = variants.stored(key)
    const answer = (stored: boolean) =>
      serveVariantFile(request, server, image, format, all, spec, signedUrl, key, stored)
    return typeof stored === 'boolean' ? answer(stored) : stored.then(answer)
  }

  function serveVariantFile(
    request: Request,
    server: Server<unknown> | null,
    image: LiveImage,
    format: VariantSpec['format'],
    all: Deliveries,
    spec: VariantSpec,
    signedUrl: string | undefined,
    key: StorageKey,
    stored: boolean,
  ): Response | Promise<Response> {
    all.variants ??= new Map()
    const known = all.variants
    // Remembered once stored, so as many as the image's stored variants (made under the per-IP cap), never a guess.
    if (stored && signedUrl) {
      all.signed ??= new Map()
      all.signed.set(signedUrl, spec)
    }
    const kept = known.get(key)
    if (stored && kept) return serve(request, storage, hot, kept)
    // Not stored (or not served yet): a new delivery, so nothing learned of an evicted file is used again.
    const etag = `"${key.slice(key.indexOf('/') + 1)}"`
    const d = delivery(key, { 'content-type': FORMAT_MIME[format] }, etag, redirect, image.createdAt)
    known.set(key, d)
    if (stored) return serve(request, storage, hot, d)
    const cached = notModified(request, d)
    if (cached) return cached
    // The job takes its turn in the media pool as this client's work (src/workers/fair-queue.ts).
    const owner = `ip:${ipKey(resolveClientIp(request, server, deps.trustProxy))}`
    const starting = () => deps.variantsMade.admit(request, server)
    return variants.ensure(image, spec, key, { owner, starting }).then(() => serve(request, storage, hot, d))
  }

  return variant
}
