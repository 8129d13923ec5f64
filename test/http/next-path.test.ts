/**
 * The one check of where the site goes next (src/http/next-path.ts), judged by a URL parser as a browser resolves a
 * link on a page of this site: every hostile form of issue 17 and issue 33 is refused (or, when it is a path of this
 * site after all, resolves here), and paths of this site pass with their query and fragment.
 */
import { describe, expect, test } from 'bun:test'
import { NEXT_MAX, sameSitePath } from '../../src/http/next-path'

const SITE = 'https://img.example'

/** Where a browser on a page of SITE goes with `location.assign(path)`. */
const landing = (path: string) => new URL(path, `${SITE}/login`)

describe('sameSitePath', () => {
  // Each as the value arrives, percent-decoded once (URLSearchParams).
  const hostile = [
    '/.//evil.example/x', // dot segments resolve to //evil.example/x
    '/..//x',
    '/./..//evil.example',
    '/a/../..//evil.example',
    '//evil.example',
    '///evil.example',
    '/\\evil.example', // a backslash reads as a slash
    '\\\\evil.example',
    '/\\/evil.example',
    '/\t/evil.example', // tabs and newlines are dropped by browsers
    '/\n/evil.example',
    '/\r/evil.example',
    '/\u0000/evil.example',
    '/\u2028/evil.example', // Unicode whitespace
    '/\u00a0/evil.example',
    ' //evil.example',
    'https://evil.example/',
    'https:evil.example',
    'javascript:alert(1)',
    'evil.example',
    '',
    `/${'a'.repeat(NEXT_MAX)}`,
  ]
  for (const next of hostile) {
    test(`refused: ${JSON.stringify(next)}`, () => {
      expect(sameSitePath(next)).toBeNull()
    })
  }

  test('refused: nothing given', () => {
    expect(sameSitePath(undefined)).toBeNull()
    expect(sameSitePath(null)).toBeNull()
  })

  test('a path of this site passes with its query and fragment, and lands on this site', () => {
    for (const [next, expected] of [
      ['/dashboard', '/dashboard'],
      ['/gallery?page=2#top', '/gallery?page=2#top'],
      ['/dashboard#security', '/dashboard#security'],
      ['/a/./b/../c', '/a/c'],
      ['/%2F%2Fevil.example', '/%2F%2Fevil.example'], // sent twice-encoded: an odd path of this site, not a host
      ['/%5Cevil.example', '/%5Cevil.example'],
      ['/i/ab%20cd', '/i/ab%20cd'],
    ]) {
      const path = sameSitePath(next)
      expect(path).toBe(expected)
      expect(landing(path!).origin).toBe(SITE)
    }
  })

  test('whatever passes lands on this site (a sample of paths with dots, slashes and escapes)', () => {
    const parts = ['.', '..', '', '/', '%2e', '%2F', 'a', '@', ':', '?', '#', '%5C']
    for (const a of parts)
      for (const b of parts)
        for (const c of parts) {
          const path = sameSitePath(`/${a}/${b}/${c}`)
          if (path !== null) expect(landing(path).origin).toBe(SITE)
        }
  })
})
