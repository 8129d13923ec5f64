/**
 * What making a picture from an original costs, predicted from its header before any pixel is decoded, so a size that
 * would run past the media workers' budgets is never started (docs/api.md: Sizes and formats). Pure: the server reads it
 * from an image's row (its pages and /cdn decide without a job), the worker from the file.
 *
 * The unit is one pixel of one frame decoded, resized or encoded: a few nanoseconds of one core (a 1000-frame
 * 1000x1000 animation, 1000 megapixels decoded, made into a 1000x1000 animated WebP, 2000 units in all, took 8.7 s here
 * on a quiet core and overran the 20 s budget on a busy one). An SVG is drawn at the size it is shown: each filter
 * primitive it runs passes over every pixel, at about FILTER_PASS_WORK units a pixel (a Gaussian blur measured ~200 ns
 * a pixel); each element it draws costs about SVG_ELEMENT_WORK whatever the size (a path, ~16 µs).
 */
import type { ImageFormat } from './formats'
import type { VariantSpec } from './processor'
import { fitWithin, THUMBNAIL_SIZE } from './thumbnail'

/** Canvases of the pixel limit an upload may make its media work do: the budget of every picture made from it. */
export const ANIMATION_FRAME_BUDGET = 10
/** Pixel work one picture may take: the frames of an animation decoded, or a size made from an original. */
export const workBudget = (maxPixels: number) => ANIMATION_FRAME_BUDGET * maxPixels

export const FILTER_PASS_WORK = 64
export const SVG_ELEMENT_WORK = 4096

/** What an image's row says of its cost (the columns `frames` and `filter_passes`). */
export interface WorkFacts {
  format: ImageFormat
  width: number
  height: number
  /** Frames of an animation, 1 for a still picture. */
  frames: number
  /** SVG: filter primitives its drawing runs, every `<use>` and `url(#...)` reference followed; 0 otherwise. */
  filterPasses: number
}

/** The box a picture is drawn in: a size's width, and its height when it has one (else the width bounds it alone). */
type Box = Pick<VariantSpec, 'width' | 'height' | 'fit'>

/** Pixels of the picture `box` makes of a width x height original: never enlarged; a filled box (cover, contain, fill) whole. */
function outputPixels(facts: WorkFacts, box: Box): number {
  if (facts.format === 'svg') {
    // Drawn at the scale that fits the box's longer side (processor.open), whatever is cut from it after.
    const side = fitWithin(Math.max(box.width, box.height ?? 0), facts.width, facts.height)
    return side.width * side.height
  }
  if (box.fit !== 'inside' && box.height !== undefined) return box.width * box.height
  const scale = Math.min(1, box.width / facts.width, box.height === undefined ? 1 : box.height / facts.height)
  return Math.max(1, Math.round(facts.width * scale)) * Math.max(1, Math.round(facts.height * scale))
}

/** The pixel work of drawing the original into `box`, every frame when `keepFrames` (an animated WebP) else the first. */
export function renderWork(facts: WorkFacts, box: Box, keepFrames: boolean): number {
  const out = outputPixels(facts, box)
  if (facts.format === 'svg') return out * (1 + FILTER_PASS_WORK * facts.filterPasses)
  const frames = keepFrames ? facts.frames : 1
  return frames * (facts.width * facts.height + out)
}

const megapixels = (units: number) => `${Math.round(units / 1e6).toLocaleString('en')} megapixels`

/** What makes an original costly, in words. */
function costlyPart(facts: WorkFacts): string {
  if (facts.format === 'svg') return `an SVG that runs ${facts.filterPasses.toLocaleString('en')} filter passes`
  return facts.frames > 1
    ? `${facts.frames.toLocaleString('en')} frames of ${facts.width}x${facts.height}`
    : `${facts.width}x${facts.height}`
}

/**
 * Why `spec` may not be made from this original (its predicted work is past the budget), or null when it may. An
 * animation keeps its frames in WebP only; every other format is its first frame.
 */
export function tooCostly(facts: WorkFacts, spec: VariantSpec, maxPixels: number): string | null {
  const work = renderWork(facts, spec, spec.format === 'webp' && facts.frames > 1)
  const budget = workBudget(maxPixels)
  if (work <= budget) return null
  return `This size would take too much work to make: ${costlyPart(facts)} drawn at ${spec.width}${spec.height ? `x${spec.height}` : ' wide'} is ${megapixels(work)} of pixel work, over the ${megapixels(budget)} a picture may take; the original and its thumbnail are served as they are`
}

/** The upload-time thumbnail's box. */
export const THUMBNAIL_BOX: Box = { width: THUMBNAIL_SIZE, height: THUMBNAIL_SIZE, fit: 'inside' }
