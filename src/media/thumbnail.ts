/** Thumbnails fit within this square (INTERFACE.md) and are never enlarged. */
export const THUMBNAIL_SIZE = 500

/** A thumbnail's size follows from the original's, so pages give it without reading the thumbnail. */
export function thumbnailSize(width: number, height: number) {
  const scale = Math.min(1, THUMBNAIL_SIZE / width, THUMBNAIL_SIZE / height)
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) }
}
