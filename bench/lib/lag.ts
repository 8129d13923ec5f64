import { readFileSync } from 'node:fs'

/** One late turn of the probe's timer (bench/lib/server-probe.ts): the event loop was held from `end - gapMs` to `end`. */
export interface Gap {
  end: number
  gapMs: number
  cpuMs: number
}

/** Now as the probe stamps its gaps: epoch milliseconds, sub-millisecond. */
export const epochNow = () => performance.timeOrigin + performance.now()

/** The lines a probe has written to `file` so far (none while it has written nothing). */
export function probeLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean)
  } catch {
    return []
  }
}

export function readGaps(file: string): Gap[] {
  return probeLines(file).map((line) => {
    const [end, gapMs, cpuMs] = line.split(' ').map(Number)
    return { end, gapMs, cpuMs }
  })
}

/**
 * The worst stall that overlaps [from, to] (epoch ms): the one in which the thread spent the most CPU, the part of a
 * stall the process held the loop for (the rest was waiting for a core, on a loaded machine). None (0 ms) when the loop
 * never stalled past the probe's threshold.
 */
export function worstStall(gaps: Gap[], from: number, to: number): Gap {
  let worst: Gap = { end: to, gapMs: 0, cpuMs: 0 }
  for (const g of gaps) if (g.end > from && g.end - g.gapMs < to && g.cpuMs > worst.cpuMs) worst = g
  return worst
}
