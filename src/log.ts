/**
 * The server's one logger: one JSON line per event (`level`, `msg`, then the event's own fields), info on stdout,
 * warnings and errors on stderr, so every line reads the same to an operator's tools.
 */
type Fields = Record<string, unknown>

const line = (level: string, msg: string, fields?: Fields) => JSON.stringify({ level, msg, ...fields })

export const log = {
  info: (msg: string, fields?: Fields) => console.log(line('info', msg, fields)),
  warn: (msg: string, fields?: Fields) => console.error(line('warn', msg, fields)),
  error: (msg: string, fields?: Fields) => console.error(line('error', msg, fields)),
}
