// What a variant is (presets, formats, fits, names, whether one is served): plain values, no request schema, so the
// list reads' Worker loads none of Elysia (model.ts holds the schemas).
import type { VariantSpec } from '../../media'
import { formatFromMime } from '../../media/formats'
import { tooCostly, type WorkFacts } from '../../media/work'

/** Preset names and the square each fits within (never enlarged); `medium` is the upload-time thumbnail's size. */
export const PRESETS = { small: 320, medium: 500, large: 1280 } as const
export type Preset = keyof typeof PRESETS

/** What a variant may be encoded as; `jpg` has no alpha (transparency goes onto white): `png` keeps it. */
export const VARIANT_FORMATS = ['webp', 'avif', 'jpg', 'png'] as const satisfies readonly VariantSpec['format'][]
/** How a signed size fills its box (sharp's fits): `inside` keeps the whole image and its aspect ratio. */
export const VARIANT_FITS = ['inside', 'cover', 'contain', 'fill'] as const satisfies readonly VariantSpec['fit'][]
/** Bounds of a signed size's sides, pixels. */
export const MIN_SIDE = 16
export const MAX_SIDE = 4096

export const FORMAT_MIME: Record<VariantSpec['format'], string> = {
  webp: 'image/webp',
  avif: 'image/avif',
  jpg: 'image/jpeg',
  png: 'image/png',
}

export const isVariantFormat = (value: string): value is VariantSpec['format'] =>
  (VARIANT_FORMATS as readonly string[]).includes(value)
export const isVariantFit = (value: string): value is VariantSpec['fit'] =>
  (VARIANT_FITS as readonly string[]).includes(value)

/** A preset is the square fit of its size. */
export const presetSpec = (preset: Preset, format: VariantSpec['format']): VariantSpec => ({
  width: PRESETS[preset],
  height: PRESETS[preset],
  fit: 'inside',
  format,
})

/**
 * The storage name of an image's variant, letters and digits only (the storage key rule): the same spec always names
 * the same object, so a preset and the signed size equal to it share one.
 */
export const variantName = (imageId: string, spec: VariantSpec) =>
  `${imageId}w${spec.width}h${spec.height ?? 0}${spec.fit}`

/** What an image's row says of the cost of its sizes (src/media/work.ts). */
export const workFactsOf = (image: {
  mime: string
  width: number
  height: number
  frames: number
  filterPasses: number
}): WorkFacts => ({
  format: formatFromMime(image.mime) ?? 'png',
  width: image.width,
  height: image.height,
  frames: image.frames,
  filterPasses: image.filterPasses,
})

/**
 * Whether a preset of this image is served: the medium WebP always (the thumbnail made at upload), any other unless
 * it would cost too much to make (what pages link, so they never link a size /cdn refuses).
 */
export const presetMade = (
  image: Parameters<typeof workFactsOf>[0],
  preset: Preset,
  format: VariantSpec['format'],
  maxPixels: number,
) =>
  (preset === 'medium' && format === 'webp') ||
  tooCostly(workFactsOf(image), presetSpec(preset, format), maxPixels) === null
