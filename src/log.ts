/**
 * The server's one logger: one line per event, info on stdout, warnings and errors on stderr. A line is JSON (`time`,
 * an ISO 8601 timestamp in UTC, `level`, `msg`, then the event's own fields), so every line reads the same to an
 * operator's tools; or, once the server has chosen it for a terminal (LOG_FORMAT, see setLogFormat), the same facts as
 * a line to read: `<time> <level> <msg> key=value ...`.
 */
type Fields = Record<string, unknown>

export type LogFormat = 'json' | 'pretty'

/** JSON until the server's entry point decides: tests and tools that start the server in-process read JSON. */
let format: LogFormat = 'json'

/** `auto`: pretty when stdout is a terminal (someone reads it), JSON otherwise (a file, a pipe, a log collector). */
export function setLogFormat(choice: LogFormat | 'auto') {
  format = choice === 'auto' ? (process.stdout.isTTY ? 'pretty' : 'json') : choice
}

/** A field's value as a terminal line shows it: plain when it reads unambiguously, else quoted as JSON. */
function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)
}

function line(level: string, msg: string, fields: Fields | undefined, text: string | undefined) {
  const time = new Date().toISOString()
  if (format === 'json') return JSON.stringify({ time, level, msg, ...fields })
  const rest = text ?? [msg, ...Object.entries(fields ?? {}).map(([key, value]) => `${key}=${shown(value)}`)].join(' ')
  return `${time} ${level.padEnd(5)} ${rest}`
}

/**
 * `text`: how the line reads on a terminal instead of `msg` and its fields (the start line's sentence); the JSON line
 * keeps `msg` and the fields, which tools match on.
 */
export const log = {
  info: (msg: string, fields?: Fields, text?: string) => console.log(line('info', msg, fields, text)),
  warn: (msg: string, fields?: Fields, text?: string) => console.error(line('warn', msg, fields, text)),
  error: (msg: string, fields?: Fields, text?: string) => console.error(line('error', msg, fields, text)),
}
