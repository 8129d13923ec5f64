/** The longest `next` followed: no path of this site is longer, and a longer one is only a way to fill a database row. */
export const NEXT_MAX = 2000

/** A base of no real site: only its origin is compared. */
const BASE = 'http://next.invalid'

/**
 * Control characters, whitespace (Unicode's too) and backslashes: browsers drop tabs and newlines from a URL and read
 * `\` as `/`, so `/\t/evil.example` and `/\evil.example` lead to another host; a path of this site has none of them.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this refuses
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\s\\]/

/**
 * The one check of every "where to go next" the site follows (the login page's `?next=`, a single sign-on's return):
 * `next` (percent-decoded once, as a query parameter arrives) as a path of this site with its query and fragment, or
 * null when it could lead anywhere else. It must start with one `/`, hold nothing UNSAFE, and still be a path of this
 * origin once the URL parser has resolved it: `/.//evil.example/x` and `/..//x` resolve to `//evil.example/x` and
 * `//x`, which a browser reads as other hosts.
 */
export function sameSitePath(next: string | null | undefined): string | null {
  if (!next || next.length > NEXT_MAX || UNSAFE.test(next)) return null
  if (!next.startsWith('/') || next.startsWith('//')) return null
  let url: URL
  try {
    url = new URL(next, BASE)
  } catch {
    return null
  }
  if (url.origin !== BASE || url.pathname.startsWith('//')) return null
  return url.pathname + url.search + url.hash
}
