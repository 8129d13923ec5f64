import type { VariantSpec } from '../../media'
import { originalKey, type StorageKey, thumbnailKey } from '../../storage'
import type { LiveImage } from '../images/live-cache'
import { type Delivery, delivery, SVG_CSP } from './serve'

/** A fresh delivery of each file of an image, as its cache entry keeps them. */
export interface Deliveries {
  original?: Delivery
  thumbnail?: Delivery
  /** By storage key: presets and signed sizes. */
  variants?: Map<StorageKey, Delivery>
  /** Signed URLs (`<file>?<query>`) already verified whose variant is stored: no HMAC per cached request. */
  signed?: Map<string, VariantSpec>
}

export type ImageDeliveries = ReturnType<typeof createDeliveries>

/**
 * The answers of each cached image, kept as long as its entry: a changed or evicted image is a new entry object.
 * `redirect`: answer with a 302 to the bucket where the store can (S3_SERVE=redirect).
 */
export function createDeliveries(redirect: boolean) {
  const deliveries = new WeakMap<LiveImage, Deliveries>()
  const deliveriesOf = (image: LiveImage) => {
    const found = deliveries.get(image)
    if (found) return found
    const made: Deliveries = {}
    deliveries.set(image, made)
    return made
  }

  function originalDelivery(image: LiveImage): Delivery {
    const known = deliveriesOf(image)
    if (known.original) return known.original
    const headers: Record<string, string> = { 'content-type': image.mime }
    const svg = image.mime === 'image/svg+xml'
    if (svg) headers['content-security-policy'] = SVG_CSP
    // An SVG always streams through here: only this response can carry the sandboxing CSP.
    known.original = delivery(
      originalKey(image.id, image.ext),
      headers,
      `"${image.id}-${image.size}"`,
      redirect && !svg,
      image.createdAt,
    )
    return known.original
  }

  function thumbnailDelivery(image: LiveImage): Delivery {
    const known = deliveriesOf(image)
    known.thumbnail ??= delivery(
      thumbnailKey(image.id),
      { 'content-type': 'image/webp' },
      `"${image.id}-thumb"`,
      redirect,
      image.createdAt,
    )
    return known.thumbnail
  }

  return { of: deliveriesOf, original: originalDelivery, thumbnail: thumbnailDelivery }
}
