// Reference: sharp's own thumbnail throughput, the same operation as the upload pipeline's (fit inside 500x500,
// WebP quality 80 effort 4, from the file on disk to a file), `concurrency` at a time for `seconds`.
// Usage: bun bench/ref/sharp-thumbs.ts <image> <concurrency> <seconds> <out dir>
import { join } from 'node:path'
import sharp from 'sharp'
import { percentile } from '../lib/stats'

const [input, concArg, secondsArg, outDir] = process.argv.slice(2)
const concurrency = Number(concArg)
const seconds = Number(secondsArg)
// Same as the service: no libvips operation cache (it would serve repeated loads of one file from memory).
sharp.cache(false)

const thumb = (i: number) =>
  sharp(input, { failOn: 'error', sequentialRead: true, autoOrient: true })
    .resize(500, 500, { fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 80, effort: 4 })
    .toFile(join(outDir, `ref-${i}.webp`))

await thumb(0) // warm-up: loads libvips' codecs
const latencies: number[] = []
const start = performance.now()
const deadline = start + seconds * 1000
let last = start
await Promise.all(
  Array.from({ length: concurrency }, async (_, w) => {
    while (performance.now() < deadline) {
      const t = performance.now()
      await thumb(w)
      last = performance.now()
      latencies.push(last - t)
    }
  }),
)
console.log(
  JSON.stringify({
    count: latencies.length,
    rate: latencies.length / ((last - start) / 1000),
    p50Ms: percentile(latencies, 50),
    p95Ms: percentile(latencies, 95),
  }),
)
