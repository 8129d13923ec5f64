import { readFileSync, statSync } from 'node:fs'
import { readConfigFile } from '../../config'

/**
 * The default /robots.txt: the gallery and profiles are for crawling; account pages, the API (JSON, and uploads
 * behind it) and the admin pages are not. Everything else (viewer and album pages) is left to each page's own
 * `robots` meta, which marks private, mature and password-protected ones noindex.
 */
export const DEFAULT_ROBOTS_TXT = `User-agent: *
Allow: /gallery
Allow: /u/
Disallow: /dashboard
Disallow: /api/
Disallow: /admin
`

/** Bound of a ROBOTS_TXT file: it is held in memory; crawlers read at most 500 KiB (RFC 9309) and it needs far less. */
export const ROBOTS_TXT_MAX_BYTES = 64 * 1024

/** The text of a ROBOTS_TXT file; a larger file is refused. */
function loadRobotsTxt(path: string): string {
  if (statSync(path).size > ROBOTS_TXT_MAX_BYTES) throw new Error(`larger than ${ROBOTS_TXT_MAX_BYTES} bytes`)
  return readFileSync(path, 'utf8')
}

/** The text /robots.txt answers: the ROBOTS_TXT file's, read once at startup (missing or too large stops it). */
export const robotsTxtFrom = (file: string) => readConfigFile('ROBOTS_TXT', file, loadRobotsTxt) ?? DEFAULT_ROBOTS_TXT
