import { cpus, release, totalmem } from 'node:os'
import { round } from './stats'

/** One measured figure, with the reference it is compared against in the same run. */
export interface Figure {
  group: string
  figure: string
  value: number
  unit: string
  reference?: string
  refValue?: number
  /** value / refValue. */
  ratio?: number
  /** Human-readable target, e.g. ">= 0.9x" or "< 20 ms". */
  target?: string
  met?: boolean
  /** Extra detail: latencies, counts, which tool. */
  note?: string
}

export function figure(f: Omit<Figure, 'ratio'> & { ratio?: number }): Figure {
  const ratio = f.ratio ?? (f.refValue !== undefined && f.refValue > 0 ? f.value / f.refValue : undefined)
  return { ...f, ratio }
}

export function machine() {
  const cpu = cpus()
  return {
    cores: cpu.length,
    cpu: cpu[0]?.model ?? 'unknown',
    memGiB: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    bun: Bun.version,
  }
}

/** A value with its unit, as the tables print it. */
export const fmt = (n: number | undefined, unit = '') => {
  if (n === undefined || !Number.isFinite(n)) return '–'
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2
  return `${round(n, digits).toLocaleString('en-US')}${unit ? ` ${unit}` : ''}`
}
const ratioText = (r: number | undefined) =>
  r === undefined || !Number.isFinite(r) ? '–' : `${round(r, 2).toFixed(2)}x`
const metText = (f: Figure) => (f.met === undefined ? '' : f.met ? 'met' : '**missed**')

/** One console line per figure. */
export function printFigure(f: Figure) {
  const ref = f.reference ? ` | ref ${fmt(f.refValue, f.unit)} (${f.reference}) | ratio ${ratioText(f.ratio)}` : ''
  const target = f.target ? ` | target ${f.target}: ${f.met ? 'met' : 'MISSED'}` : ''
  console.log(`  ${f.figure}: ${fmt(f.value, f.unit)}${ref}${target}${f.note ? `  [${f.note}]` : ''}`)
}

/** When and on what a run was measured. */
export function measuredOn(meta: { date: string; machine: ReturnType<typeof machine> }) {
  const m = meta.machine
  return `Measured ${meta.date} on ${m.cores} cores / ${m.memGiB} GiB (${m.cpu}), Linux ${m.kernel}, Bun ${m.bun}`
}

/** A figure's cells as Markdown text: `<id>` must not read as an HTML tag, nor a pipe end the cell. */
export const cell = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\|/g, '\\|')

/** The results as a Markdown table (bench/README.md keeps the latest one). */
export function markdownTable(
  figures: Figure[],
  meta: { date: string; machine: ReturnType<typeof machine>; loadTool: string; seconds: number; rounds: number },
) {
  const lines = [
    `${measuredOn(meta)}; load generator: ${meta.loadTool}, ` +
      `${meta.rounds} interleaved runs of ${meta.seconds} s per throughput figure (median), loopback only.`,
    '',
    '| Group | Figure | Value | Reference | Ref. value | Ratio | Target | Status | Detail |',
    '|---|---|---:|---|---:|---:|---|---|---|',
  ]
  for (const f of figures) {
    const cells = [
      f.group,
      f.figure,
      fmt(f.value, f.unit),
      f.reference ?? '',
      f.reference ? fmt(f.refValue, f.unit) : '',
      f.reference ? ratioText(f.ratio) : '',
      f.target ?? '',
      metText(f),
      f.note ?? '',
    ]
    lines.push(`| ${cells.map(cell).join(' | ')} |`)
  }
  return lines.join('\n')
}
