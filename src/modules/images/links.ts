/** A viewer page's path prefix: `/i/<id>`. */
export const VIEWER_PATH = '/i/'

/** The link shapes of INTERFACE.md, defined once. `cdnBase` is where /cdn paths are served from. */
export function imageLinks(base: { publicUrl: string; cdnBase: string }, image: { id: string; ext: string }) {
  return {
    url: `${base.cdnBase}/cdn/${image.id}.${image.ext}`,
    thumbnail: `${base.cdnBase}/cdn/medium/${image.id}.webp`,
    viewer: `${base.publicUrl}${VIEWER_PATH}${image.id}`,
    delete: `${base.publicUrl}/api/v1/image/${image.id}`,
  }
}

export type LinkBase = Parameters<typeof imageLinks>[0]
