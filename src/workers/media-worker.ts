/**
 * A media worker process: runs the jobs of `localMedia` for the server's pool (src/workers/media-pool.ts), one at a
 * time. Started by the pool as `bun media-worker.ts` (or, in the single binary, the binary itself with
 * IMGHOST_WORKER=media), configured by the pool's setup message (the media options).
 */
import { localMedia, type MediaOptions, type VariantSpec } from '../media'
import { serveJobs } from './serve'

serveJobs((options: MediaOptions) => {
  const media = localMedia(options)
  return {
    jobs: {
      ingest: (path: string, opts: { thumbPath: string; classifierInput: boolean }, early: (rgb: Uint8Array) => void) =>
        media.ingest(path, { thumbPath: opts.thumbPath, classifierInput: opts.classifierInput ? early : undefined }),
      thumbnail: (path: string, thumbPath: string) => media.thumbnail(path, thumbPath),
      variant: (path: string, spec: VariantSpec, destPath: string) => media.variant(path, spec, destPath),
      classifierInput: (path: string) => media.classifierInput(path),
      perceptualHash: (path: string) => media.perceptualHash(path),
    },
  }
})
