/**
 * The prediction of a size's cost (src/media/work.ts) against the budget of ANIMATION_FRAME_BUDGET canvases of the
 * pixel limit, on the files of issue 33 and on ordinary ones.
 */
import { describe, expect, test } from 'bun:test'
import type { VariantSpec } from '../../src/media'
import { renderWork, tooCostly, type WorkFacts, workBudget } from '../../src/media/work'

const MAX_PIXELS = 100_000_000
const box = (side: number, format: VariantSpec['format']): VariantSpec => ({
  width: side,
  height: side,
  fit: 'inside',
  format,
})
const gif = (side: number, frames: number): WorkFacts => ({
  format: 'gif',
  width: side,
  height: side,
  frames,
  filterPasses: 0,
})

describe('tooCostly', () => {
  test("issue 33's GIF (1000 frames of 1000x1000): no WebP of it but the thumbnail; its first frame in any other format", () => {
    const bomb = gif(1000, 1000)
    // Every frame decoded and encoded again: 1000 x (1000x1000 + 1000x1000), twice the budget.
    expect(renderWork(bomb, box(1280, 'webp'), true)).toBe(2 * workBudget(MAX_PIXELS))
    expect(tooCostly(bomb, box(1280, 'webp'), MAX_PIXELS)).toContain('1,000 frames of 1000x1000')
    expect(tooCostly(bomb, box(320, 'webp'), MAX_PIXELS)).not.toBeNull()
    for (const format of ['avif', 'jpg', 'png'] as const)
      expect(tooCostly(bomb, box(1280, format), MAX_PIXELS)).toBeNull()
  })

  test('an animation half as long is made at every preset', () => {
    for (const side of [320, 500, 1280]) expect(tooCostly(gif(1000, 500), box(side, 'webp'), MAX_PIXELS)).toBeNull()
  })

  test('a still picture at the pixel limit is made at every size a signed URL may ask for', () => {
    const still: WorkFacts = { format: 'jpeg', width: 10_000, height: 10_000, frames: 1, filterPasses: 0 }
    for (const fit of ['inside', 'cover', 'contain', 'fill'] as const)
      expect(tooCostly(still, { width: 4096, height: 4096, fit, format: 'avif' }, MAX_PIXELS)).toBeNull()
  })

  test('a width alone bounds a tall picture by its width only', () => {
    const tall: WorkFacts = { format: 'gif', width: 100, height: 10_000, frames: 900, filterPasses: 0 }
    // Not enlarged: 100 wide stays 100x10000, so every frame is encoded whole.
    expect(renderWork(tall, { width: 800, fit: 'inside' }, true)).toBe(900 * 2 * 1_000_000)
  })

  test('an SVG: each filter pass costs the drawn pixels again, so many filters rule out the large sizes only', () => {
    const svg: WorkFacts = { format: 'svg', width: 2000, height: 2000, frames: 1, filterPasses: 20 }
    expect(tooCostly(svg, box(1280, 'jpg'), MAX_PIXELS)).toContain('20 filter passes')
    expect(tooCostly(svg, box(500, 'jpg'), MAX_PIXELS)).toBeNull()
    expect(
      tooCostly({ ...svg, filterPasses: 0 }, { width: 4096, height: 4096, fit: 'cover', format: 'png' }, MAX_PIXELS),
    ).toBeNull()
  })

  test('the budget follows MAX_IMAGE_PIXELS', () => {
    expect(tooCostly(gif(1000, 500), box(1280, 'webp'), MAX_PIXELS / 2)).not.toBeNull()
  })
})
