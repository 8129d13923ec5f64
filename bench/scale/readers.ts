// Visitors reading without pause: `clients` loops, each asking the paths of <paths.json> in turn (client k starts at
// path k), for `seconds`; prints how many reads completed, their rate and latencies. Its own process, so the bench's
// event loop and the probe's are not the ones doing the reading.
// Usage: bun bench/scale/readers.ts <base url> <clients> <seconds> <paths.json>
import { percentile } from '../lib/stats'

const [base, clientsArg, secondsArg, pathsFile] = process.argv.slice(2)
const paths = (await Bun.file(pathsFile).json()) as string[]
const clients = Number(clientsArg)
const start = performance.now()
const deadline = start + Number(secondsArg) * 1000
const latencies: number[] = []
let errors = 0
let last = start
await Promise.all(
  Array.from({ length: clients }, async (_, k) => {
    for (let i = k; performance.now() < deadline; i++) {
      const t = performance.now()
      try {
        const res = await fetch(base + paths[i % paths.length])
        await res.arrayBuffer()
        if (res.status !== 200) errors++
        else latencies.push(performance.now() - t)
      } catch {
        errors++
      }
      last = performance.now()
    }
  }),
)
console.log(
  JSON.stringify({
    reads: latencies.length,
    errors,
    rate: latencies.length / ((last - start) / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  }),
)
