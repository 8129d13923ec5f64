/** Thumbnails fit within this square (INTERFACE.md) and are never enlarged. */
export const THUMBNAIL_SIZE = 500

/** The size of an image fitted within a `box` x `box` square, never enlarged (sharp's `inside` without enlargement). */
export function fitWithin(box: number, width: number, height: number) {
  const scale = Math.min(1, box / width, box / height)
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) }
}

/** A thumbnail's size follows from the original's, so pages give it without reading the thumbnail. */
export const thumbnailSize = (width: number, height: number) => fitWithin(THUMBNAIL_SIZE, width, height)
