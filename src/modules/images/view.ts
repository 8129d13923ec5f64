import type { Image } from '../../db/schema'
import { iso } from '../../lib/time'
import { imageLinks, type LinkBase } from './links'

/** How every answer shows an image: one mapping of its fields, each answer's shape picked from it (IMAGE_SHAPES). */

/** What a response may show of an image: a row, or a cached live image (which carries no filename). */
type ShownImage = Pick<Image, 'id' | 'ext' | 'mime' | 'size' | 'width' | 'height' | 'views' | 'visibility' | 'nsfw'> & {
  filename?: string
  createdAt: Date | number
  expiresAt: Date | number | null
}

/**
 * An image under every name the API's image shapes give its fields (INTERFACE.md), mapped once: each response picks
 * its own with pickImage. `views` is the count to show (with views still buffered in memory, where the answer has them).
 */
export function imageFields<I extends ShownImage>(base: LinkBase, image: I, views = image.views) {
  const uploaded = iso(image.createdAt)
  return {
    id: image.id,
    ...imageLinks(base, image),
    filename: image.filename as I['filename'],
    width: image.width,
    height: image.height,
    size: image.size,
    mime: image.mime,
    views,
    visibility: image.visibility,
    nsfw: image.nsfw,
    created_at: uploaded,
    createdAt: uploaded,
    uploadedAt: uploaded,
    /** ISO 8601, or null when it never expires. */
    expiresAt: image.expiresAt === null ? null : iso(image.expiresAt),
  }
}

/** The fields `keys` of an image, in that order. */
export function pickImage<F extends object, K extends keyof F>(fields: F, keys: readonly K[]) {
  const picked = {} as Pick<F, K>
  for (const key of keys) picked[key] = fields[key]
  return picked
}
