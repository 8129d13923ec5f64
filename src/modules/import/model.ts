import { readFileSync, statSync } from 'node:fs'
import { sep } from 'node:path'
import { readConfigFile } from '../../config'
import { isImageId } from '../images/model'

/**
 * The legacy link map: one `old path,new id[,direct|viewer]` a line, as `import --map` writes it or an operator by
 * hand. Old paths are URL paths as a browser sends them (`/images/2019/cat.png`, `/my%20cat.png`); both they and a
 * request's path are compared percent-decoded, so either spelling of a character matches.
 */

/** Bounds of a LEGACY_REDIRECTS file: it is read whole at startup and held in memory (an entry is ~200 bytes). */
export const LEGACY_MAX_BYTES = 16 * 1024 * 1024
export const LEGACY_MAX_LINES = 200_000
/** Longer than any URL path a browser or proxy keeps. */
const OLD_PATH_MAX = 2048

export type LegacyTarget = 'viewer' | 'direct'
export interface LegacyRedirect {
  id: string
  target: LegacyTarget
}

/** A CSV line of ours for a file's path under the imported folder: its segments percent-encoded, so never quoted. */
export const mapLine = (relativePath: string, id: string) =>
  `/${relativePath.split(sep).map(encodeURIComponent).join('/')},${id}\n`

/** A request path or a file's old path, percent-decoded; null when it is not valid percent-encoding. */
export function decodedPath(path: string): string | null {
  try {
    return decodeURIComponent(path)
  } catch {
    return null
  }
}

/** One CSV line's fields (RFC 4180 quoting within the line; unquoted fields trimmed); null when malformed. */
function csvFields(line: string): string[] | null {
  const fields: string[] = []
  let i = 0
  for (;;) {
    if (line[i] === '"') {
      let value = ''
      i++
      for (;;) {
        const end = line.indexOf('"', i)
        if (end < 0) return null
        value += line.slice(i, end)
        i = end + 1
        if (line[i] !== '"') break
        value += '"'
        i++
      }
      fields.push(value)
      if (i < line.length && line[i] !== ',') return null
    } else {
      const end = line.indexOf(',', i)
      fields.push(line.slice(i, end < 0 ? line.length : end).trim())
      i = end < 0 ? line.length : end
    }
    if (i >= line.length) return fields
    i++ // the comma
  }
}

export class LegacyMapError extends Error {}

/**
 * Reads a whole legacy link map; throws a LegacyMapError naming the first bad line. Blank lines and `#` comments are
 * skipped; one old path may appear twice only with the same target.
 */
export function parseLegacyMap(text: string): Map<string, LegacyRedirect> {
  const lines = text.split(/\r?\n/)
  if (lines.length > LEGACY_MAX_LINES) throw new LegacyMapError(`more than ${LEGACY_MAX_LINES} lines`)
  const map = new Map<string, LegacyRedirect>()
  lines.forEach((line, index) => {
    if (line.trim() === '' || line.startsWith('#')) return
    const bad = (why: string): never => {
      throw new LegacyMapError(`line ${index + 1}: ${why} (expected "old path,new id[,direct|viewer]")`)
    }
    const fields = csvFields(line) ?? bad('unbalanced quotes')
    if (fields.length < 2 || fields.length > 3) bad(`${fields.length} fields`)
    const [path, id, target = 'viewer'] = fields as [string, string, string?]
    if (!path.startsWith('/') || path.length > OLD_PATH_MAX || /[\p{Cc}?#]/u.test(path)) {
      bad(`the old path must be a URL path starting with / (at most ${OLD_PATH_MAX} characters, no query)`)
    }
    const key = decodedPath(path) ?? bad('the old path has a malformed %-escape')
    if (!isImageId(id)) bad(`"${id.slice(0, 20)}" is not an image id`)
    if (target !== 'viewer' && target !== 'direct') bad('the third field must be "direct" or "viewer"')
    const known = map.get(key)
    if (known && (known.id !== id || known.target !== target)) bad(`${path} is already mapped to ${known.id}`)
    map.set(key, { id, target: target as LegacyTarget })
  })
  return map
}

/** Reads and checks a legacy link map file, refusing one past the size bound before reading it. */
function loadLegacyMap(path: string): ReadonlyMap<string, LegacyRedirect> {
  if (statSync(path).size > LEGACY_MAX_BYTES) throw new LegacyMapError(`larger than ${LEGACY_MAX_BYTES} bytes`)
  return parseLegacyMap(readFileSync(path, 'utf8'))
}

/**
 * The LEGACY_REDIRECTS map (old path, percent-decoded, to the image it now is), read once at startup: a missing or
 * malformed file stops it with its first bad line; null when none is set.
 */
export const legacyRedirectsFrom = (file: string) => readConfigFile('LEGACY_REDIRECTS', file, loadLegacyMap)
