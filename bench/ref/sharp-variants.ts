// Reference: sharp alone making the same resize as a variant's first request (src/media/processor.ts `variant`: the
// same decode options, resize and encoder settings), from the file on disk to a file, `count` in all, `concurrency`
// at a time.
// Usage: bun bench/ref/sharp-variants.ts <image> <width> <height|0> <fit> <webp|avif|jpg> <concurrency> <count> <out dir>
import { join } from 'node:path'
import sharp, { type FitEnum, type Sharp } from 'sharp'
import { percentile } from '../lib/stats'

const [input, w, h, fit, format, concArg, countArg, outDir] = process.argv.slice(2)
const concurrency = Number(concArg)
const count = Number(countArg)
// Same as the service: no libvips operation cache (it would serve repeated loads of one file from memory).
sharp.cache(false)

const ENCODERS: Record<string, (image: Sharp) => Sharp> = {
  webp: (image) => image.webp({ quality: 80, effort: 4 }),
  avif: (image) => image.avif({ quality: 50, effort: 2 }),
  jpg: (image) => image.flatten({ background: '#ffffff' }).jpeg({ quality: 82 }),
}

const make = (i: number) =>
  ENCODERS[format](
    sharp(input, { failOn: 'error', sequentialRead: true, autoOrient: true }).resize(
      Number(w),
      Number(h) || undefined,
      { fit: fit as keyof FitEnum, withoutEnlargement: true },
    ),
  ).toFile(join(outDir, `ref-${i}.${format}`))

await make(0) // warm-up: loads libvips' codecs
const latencies: number[] = []
let next = 0
const start = performance.now()
await Promise.all(
  Array.from({ length: concurrency }, async (_, worker) => {
    while (next < count) {
      next++
      const t = performance.now()
      await make(worker)
      latencies.push(performance.now() - t)
    }
  }),
)
const seconds = (performance.now() - start) / 1000
console.log(
  JSON.stringify({
    count,
    seconds,
    rate: count / seconds,
    p50Ms: percentile(latencies, 50),
    p95Ms: percentile(latencies, 95),
  }),
)
