import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { localMedia } from '../../src/media'
import type { NsfwScores } from '../../src/moderation'
import { mediaOptionsOf } from '../../src/workers/media-pool'
import { drawingPng, landscapeJpeg } from './samples'

// The media job's own code with the default settings (the server runs the same in its worker processes).
const media = localMedia(mediaOptionsOf(loadConfig({})))

/** The model's input for an upload of `bytes`, as the upload pipeline makes it: 224x224 RGB cut from the thumbnail. */
export async function uploadClassifierInput(bytes: Uint8Array): Promise<Uint8Array> {
  const dir = mkdtempSync(join(tmpdir(), 'imghost-input-'))
  try {
    const path = join(dir, 'upload')
    await Bun.write(path, bytes)
    let input: Uint8Array | undefined
    await media.ingest(path, { thumbPath: join(dir, 'thumb.webp'), classifierInput: (rgb) => (input = rgb) })
    return input!
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The flat cartoon of the upload tests, as the model sees it. */
export const drawingImage = async () => uploadClassifierInput(await drawingPng())

/** The photo-like landscape of the upload tests, as the model sees it. */
export const landscapeImage = async () => uploadClassifierInput(await landscapeJpeg())

/**
 * The least probability of the top class where a verdict is asserted. Observed on wasm: Drawing ~0.96 for the cartoon,
 * Neutral ~0.99 for the landscape; the bound leaves room for another backend or sharp version, and still fails a model
 * (or a class mapping) that answers anything else.
 */
export const CLEAR_TOP = 0.8

/** The class the model is most sure of. */
export const topClass = (s: NsfwScores) =>
  (Object.entries(s) as [keyof NsfwScores, number][]).reduce((a, b) => (b[1] > a[1] ? b : a))[0]
