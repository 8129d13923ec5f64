/**
 * The progress line of long commands (import, backup, restore, migrate-db, rehash, check): on stderr and only when
 * stderr is a terminal, so a script or a log reading the command's output never gets carriage returns in it.
 */

const BAR_WIDTH = 20
/** Redraws at most this often; the last count is always drawn. */
const REDRAW_MS = 100

/** `1:05`, `2:03:04`: the time left, from seconds. */
function clock(seconds: number): string {
  const whole = Math.max(0, Math.ceil(seconds))
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60]
  const two = (n: number) => String(n).padStart(2, '0')
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`
}

/** One progress line: a bar, the count, the rate and the time left when the total is known, else count and rate. */
export function progressLine(label: string, done: number, total: number | undefined, seconds: number): string {
  const rate = seconds > 0 ? done / seconds : 0
  const perSecond = `${rate < 10 ? rate.toFixed(1) : Math.round(rate)}/s`
  if (total === undefined) return `${label} ${done} ${perSecond}`
  const filled = total > 0 ? Math.round(BAR_WIDTH * Math.min(1, done / total)) : BAR_WIDTH
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`
  const eta = done >= total ? '0:00' : rate > 0 ? clock((total - done) / rate) : '?'
  return `${label} ${bar} ${done}/${total} ${perSecond} ETA ${eta}`
}

export interface Progress {
  /** `done` of `total` (unknown: a counter without a bar); `note` follows the line. */
  update(done: number, total?: number, note?: string): void
  /** Ends the line, if one was drawn. */
  end(): void
}

export function progress(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  const shown = stream.isTTY === true
  const started = performance.now()
  let drawnAt = Number.NEGATIVE_INFINITY
  let drawn = false
  return {
    update(done, total, note) {
      if (!shown) return
      const now = performance.now()
      if (now - drawnAt < REDRAW_MS && done !== total) return
      drawnAt = now
      drawn = true
      const line = progressLine(label, done, total, (now - started) / 1000)
      stream.write(`\r\x1b[K${line}${note ? ` ${note}` : ''}`)
    },
    end() {
      if (drawn) stream.write('\n')
      drawn = false
    },
  }
}
