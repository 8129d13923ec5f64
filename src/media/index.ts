// This module loads sharp (~25 MB resident): the server process imports only its types, and MediaError from
// ./errors; the jobs run in media worker processes (src/workers/media-worker.ts) and the CLI.
import { type StripMode, stripMetadata } from './exif'
import { createMediaProcessor, type ImageInfo, type VariantSpec } from './processor'

export { MediaError } from './errors'
export type { ImageInfo, VariantSpec } from './processor'

export interface Ingested {
  info: ImageInfo
  /** Bytes of the file as it will be stored (after metadata stripping). */
  size: number
  /** The perceptual hash (src/media/phash.ts), from the same decode as the thumbnail; null for a picture too plain to hash. */
  phash: string | null
}

/**
 * Everything done to untrusted image bytes, as whole jobs: the server runs them in worker processes under a time and
 * memory budget (src/workers/media-pool.ts), each job one call here. Every failure the bytes cause is a MediaError.
 */
export interface Media {
  /**
   * An upload: detect the format, probe the size from the header (over the pixel limit is refused before decoding),
   * strip metadata in place, decode fully once into a WebP thumbnail at `thumbPath` and the perceptual hash and, when
   * `classifierInput` is given, the classifier's 224x224 RGB input, handed to it as soon as it is cut (before the
   * thumbnail is encoded, so the scan overlaps the rest of the job). `owner`: whose work it is (see `variant`).
   */
  ingest(
    path: string,
    opts: { thumbPath: string; classifierInput?: (rgb: Uint8Array) => void; owner?: string },
  ): Promise<Ingested>
  /** A file's perceptual hash, as an upload of it would get (`cli block`); null for a picture too plain to hash. */
  perceptualHash(path: string): Promise<string | null>
  /** A stored original's thumbnail again (`check --repair`). */
  thumbnail(path: string, thumbPath: string): Promise<{ width: number; height: number }>
  /**
   * A stored original resized to `spec` at `destPath` (presets and signed sizes: src/modules/variants); a MediaError
   * when the size would take more than a picture's pixel work (src/media/work.ts). `owner` says whose work it is (an
   * account, a client address): the worker pool takes turns between owners, so one owner's slow jobs never keep
   * another's waiting behind them all.
   */
  variant(path: string, spec: VariantSpec, destPath: string, owner?: string): Promise<{ width: number; height: number }>
  /** The classifier's input of a stored original (rescans of pending images). */
  classifierInput(path: string): Promise<Uint8Array>
  /** Ends the worker processes, if any. */
  close(): Promise<void>
}

export interface MediaOptions {
  maxPixels: number
  /** Largest pixel buffer a decoder of ours (BMP, ICO) may allocate, checked before allocating. */
  maxDecodeBytes: number
  stripMetadata: StripMode
}

/** The jobs run in the calling process: inside a media worker process, and in the CLI. */
export function localMedia(opts: MediaOptions): Media {
  const processor = createMediaProcessor({ maxPixels: opts.maxPixels, maxDecodeBytes: opts.maxDecodeBytes })
  return {
    async ingest(path, { thumbPath, classifierInput }) {
      const info = await processor.inspect(path)
      await stripMetadata(path, info.format, opts.stripMetadata)
      const size = Bun.file(path).size
      // One decode feeds the thumbnail, the hash and the classifier.
      const made = await processor.thumbnailAndClassifierInput(path, info, thumbPath, classifierInput)
      return { info, size, phash: made.phash }
    },
    async perceptualHash(path) {
      return processor.perceptualHash(path, await processor.inspect(path))
    },
    async thumbnail(path, thumbPath) {
      return processor.thumbnail(path, await processor.inspect(path), thumbPath)
    },
    async variant(path, spec, destPath) {
      return processor.variant(path, await processor.inspect(path), spec, destPath)
    },
    async classifierInput(path) {
      return processor.classifierInput(path, await processor.inspect(path))
    },
    async close() {},
  }
}
