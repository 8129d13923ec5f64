/**
 * Preloaded into the service by the scale bench (`bun --preload bench/lib/lag-probe.ts src/index.ts`, with
 * BENCH_LAG_FILE set): a 1 ms interval timer inside the server process, whose every late turn (a gap of more than
 * 2 ms between two turns: the event loop held by something else) is appended to that file as
 * `<end, epoch ms> <gap ms> <this thread's CPU ms in the gap>`. The CPU column tells a block (CPU close to the gap) from
 * the process waiting for a core on a loaded machine (CPU far below it). The bench reads the file and charges each gap
 * to the requests it overlaps (bench/lib/lag.ts). Without BENCH_LAG_FILE it does nothing.
 */
import { appendFileSync } from 'node:fs'

const file = process.env.BENCH_LAG_FILE
if (file) {
  const LATE_MS = 2
  const cpuMs = () => {
    const { user, system } = process.threadCpuUsage()
    return (user + system) / 1000
  }
  let last = performance.now()
  let lastCpu = cpuMs()
  setInterval(() => {
    const now = performance.now()
    const cpu = cpuMs()
    const gap = now - last
    if (gap > LATE_MS)
      appendFileSync(
        file,
        `${(performance.timeOrigin + now).toFixed(2)} ${gap.toFixed(2)} ${(cpu - lastCpu).toFixed(2)}\n`,
      )
    last = now
    lastCpu = cpu
  }, 1).unref()
}
