// Paced latency probe: one GET every `intervalMs` (never more than one in flight) for `seconds`, or with seconds 0
// until SIGTERM; prints percentiles. Runs as its own process so its timings are not disturbed by the bench driving
// the load.
// Usage: bun bench/ref/probe.ts <url> <intervalMs> <seconds>
import { percentile, sleep } from '../lib/stats'

const [url, intervalArg, secondsArg] = process.argv.slice(2)
const interval = Number(intervalArg)
const deadline = Number(secondsArg) > 0 ? performance.now() + Number(secondsArg) * 1000 : Infinity
let stopped = false
process.on('SIGTERM', () => (stopped = true))
const latencies: number[] = []
let failures = 0
while (!stopped && performance.now() < deadline) {
  const t = performance.now()
  try {
    const res = await fetch(url)
    await res.arrayBuffer()
    if (res.status !== 200) failures++
  } catch {
    failures++
  }
  const took = performance.now() - t
  latencies.push(took)
  if (took < interval) await sleep(interval - took)
}
console.log(
  JSON.stringify({
    count: latencies.length,
    failures,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: Math.max(...latencies),
  }),
)
