/** The image formats the service accepts; every mime type and file extension comes from this table. */
export type ImageFormat = 'jpeg' | 'png' | 'gif' | 'webp' | 'svg' | 'bmp' | 'ico' | 'tiff' | 'avif' | 'heic'

/** `inPages: false`: browsers and link unfurlers cannot show the original, so pages show its thumbnail instead. */
export const FORMATS: Record<ImageFormat, { mime: string; ext: string; inPages?: false }> = {
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
  heic: { mime: 'image/heic', ext: 'heic', inPages: false },
}

const PAGE_MIMES = new Set(Object.values(FORMATS).flatMap((f) => (f.inPages === false ? [] : [f.mime])))

/** Whether pages may show an original of this mime type itself (else its thumbnail, a WebP). */
export function shownInPages(mime: string): boolean {
  return PAGE_MIMES.has(mime)
}

const BY_EXT = new Map(Object.entries(FORMATS).map(([format, { ext }]) => [ext, format as ImageFormat]))

/**
 * Inverse of `FORMATS[f].ext`. Only the canonical extension matches (no `jpeg`, `tif` or upper case), so a direct
 * link has exactly one valid spelling and any other is a 404.
 */
export function formatFromExt(ext: string): ImageFormat | undefined {
  return BY_EXT.get(ext)
}
