/** The image formats the service accepts; every mime type and file extension comes from this table. */
export type ImageFormat = 'jpeg' | 'png' | 'gif' | 'webp' | 'svg' | 'bmp' | 'ico' | 'tiff' | 'avif' | 'heic'

export const FORMATS: Record<ImageFormat, { mime: string; ext: string }> = {
  jpeg: { mime: 'image/jpeg', ext: 'jpg' },
  png: { mime: 'image/png', ext: 'png' },
  gif: { mime: 'image/gif', ext: 'gif' },
  webp: { mime: 'image/webp', ext: 'webp' },
  svg: { mime: 'image/svg+xml', ext: 'svg' },
  bmp: { mime: 'image/bmp', ext: 'bmp' },
  ico: { mime: 'image/x-icon', ext: 'ico' },
  tiff: { mime: 'image/tiff', ext: 'tiff' },
  avif: { mime: 'image/avif', ext: 'avif' },
  // HEIF with HEVC pictures (iPhone photos); sharp's prebuilt libvips cannot decode them (src/media/heic.ts does).
  heic: { mime: 'image/heic', ext: 'heic' },
}

const BY_EXT = new Map(Object.entries(FORMATS).map(([format, { ext }]) => [ext, format as ImageFormat]))

/**
 * Inverse of `FORMATS[f].ext`. Only the canonical extension matches (no `jpeg`, `tif` or upper case), so a direct
 * link has exactly one valid spelling and any other is a 404.
 */
export function formatFromExt(ext: string): ImageFormat | undefined {
  return BY_EXT.get(ext)
}

const BY_MIME = new Map(Object.entries(FORMATS).map(([format, { mime }]) => [mime, format as ImageFormat]))

/** Inverse of `FORMATS[f].mime` (a stored image's type). */
export function formatFromMime(mime: string): ImageFormat | undefined {
  return BY_MIME.get(mime)
}
