import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

// Every relative link of the repository's Markdown (README.md, ARCHITECTURE.md, docs/, bench/README.md, ...) names a
// file or directory that exists, and a `#anchor` names a heading of its target, as GitHub makes them: a page moved or
// a heading renamed without its links fails here. External links (any scheme: https:, mailto:) are not checked.

const root = join(import.meta.dir, '..', '..')
/** Not the repository's documentation: dependencies, and what .gitignore keeps out (generated or local files). */
const SKIPPED = new Set(['node_modules', '.git', 'data', 'dist', '.scratch', join('bench', 'results')])

function markdownFiles(dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (SKIPPED.has(relative(root, path))) return []
    if (entry.isDirectory()) return markdownFiles(path)
    return entry.isFile() && entry.name.endsWith('.md') ? [path] : []
  })
}

/** The lines outside fenced code blocks, with their numbers; code spans blanked (a `[x](y)` in code is no link). */
function proseLines(text: string): { line: number; text: string }[] {
  let fence: string | null = null
  const lines: { line: number; text: string }[] = []
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (marker && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null
      return
    }
    if (fence !== null) return
    lines.push({ line: i + 1, text: line.replace(/(`+)[^`]*?\1/g, (span) => ' '.repeat(span.length)) })
  })
  return lines
}

/**
 * GitHub's anchor of a heading: its text as shown (code marks, emphasis and link targets gone), lower-cased, every
 * character but letters, digits, `_`, `-` and spaces dropped, spaces made `-`.
 */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a Markdown file: one per heading (a repeated one gets -1, -2, ...), and any HTML `id`/`name`. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const { text } of proseLines(readFileSync(file, 'utf8'))) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(text)
    if (heading) {
      const base = slug(heading[1])
      const count = seen.get(base) ?? 0
      seen.set(base, count + 1)
      anchors.add(count === 0 ? base : `${base}-${count}`)
    }
    for (const html of text.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(html[1])
  }
  return anchors
}

/** Inline links and images, `[text](target "title")` and `[text](<target>)`, and reference definitions `[id]: target`. */
function linksOf(file: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = []
  for (const { line, text } of proseLines(readFileSync(file, 'utf8'))) {
    for (const m of text.matchAll(/\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+"[^"]*")?\s*\)/g))
      links.push({ line, target: m[1].replace(/^<|>$/g, '') })
    const definition = /^ {0,3}\[[^\]]+\]:\s*(\S+)/.exec(text)
    if (definition) links.push({ line, target: definition[1].replace(/^<|>$/g, '') })
  }
  return links
}

/** What is wrong with a link of `file`, or null when it resolves. */
function brokenLink(file: string, target: string, anchorCache: Map<string, Set<string>>): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null // http(s), mailto: not checked
  const hash = target.indexOf('#')
  const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash))
  const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1))
  const resolved = path === '' ? file : path.startsWith('/') ? join(root, path) : resolve(dirname(file), path)
  if (!resolved.startsWith(root)) return 'points outside the repository'
  if (!existsSync(resolved)) return 'no such file or directory'
  if (anchor === null || !statSync(resolved).isFile() || !resolved.endsWith('.md')) return null
  const anchors = anchorCache.get(resolved) ?? anchorsOf(resolved)
  anchorCache.set(resolved, anchors)
  return anchors.has(anchor) ? null : `no heading with the anchor #${anchor} in ${relative(root, resolved)}`
}

describe('Markdown links', () => {
  const files = markdownFiles()

  test('the slug is GitHub’s', () => {
    expect(slug('Chevereto API v1 (ShareX, PicGo...)')).toBe('chevereto-api-v1-sharex-picgo')
    expect(slug('Sizes and formats (variants)')).toBe('sizes-and-formats-variants')
    expect(slug('Gallery, search, profiles')).toBe('gallery-search-profiles')
    expect(slug('Ingest: CPU, and where an upload’s time goes')).toBe('ingest-cpu-and-where-an-uploads-time-goes')
    expect(slug('PostgreSQL at 10 million rows (`--rows=10000000`)')).toBe(
      'postgresql-at-10-million-rows---rows10000000',
    )
    expect(slug('Scale: 10,000 against 1,000,000 rows (issue 34)')).toBe('scale-10000-against-1000000-rows-issue-34')
  })

  test('every Markdown file of the repository is read', () => {
    const names = files.map((file) => relative(root, file))
    for (const name of ['README.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md', 'docs/README.md', 'bench/README.md'])
      expect(names).toContain(name)
    expect(names.some((name) => name.startsWith('node_modules'))).toBe(false)
  })

  test('every relative link resolves, and every #anchor names a heading of its target', () => {
    const anchorCache = new Map<string, Set<string>>()
    const broken: string[] = []
    let checked = 0
    for (const file of files) {
      for (const { line, target } of linksOf(file)) {
        if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) checked++
        const problem = brokenLink(file, target, anchorCache)
        if (problem) broken.push(`${relative(root, file)}:${line}: (${target}) ${problem}`)
      }
    }
    expect(broken).toEqual([])
    // A reader that found no links would pass the check above: the docs link to each other a good deal.
    expect(checked).toBeGreaterThan(50)
  })
})
