/**
 * Each table has one owner (README: Design, the table of owners): only the owner's files import a table from the
 * schema; every other feature reads it through the owner's repository. This reads the owners' table and the import
 * statements of every file under src/ (src/db/ defines and opens the tables: it is left out).
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import * as schema from '../../src/db/schema'

const root = join(import.meta.dir, '../..')
const read = (path: string) => readFileSync(join(root, path), 'utf8')

/** Every table: what a `*` row owns, and what a namespace import of the schema reads unless it opens a connection. */
const EVERY = '*'

/** The backticked names of a table cell. */
const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)

/** Where an owner's files are: a feature's folder, a folder, or one file. */
const ownerPath = (owner: string) =>
  owner.endsWith('.ts') ? owner : owner.includes('/') ? `${owner}/` : `src/modules/${owner}/`

/** The owners' table of the design (docs/design.md): each table's owners' paths. */
function owners(): Map<string, string[]> {
  const pages = ['README.md', ...new Bun.Glob('docs/**/*.md').scanSync({ cwd: root })]
  for (const page of pages) {
    const lines = read(page).split('\n')
    const start = lines.findIndex((line) => /^\|\s*Owner\s*\|\s*Tables\s*\|$/.test(line))
    if (start < 0) continue
    const map = new Map<string, string[]>()
    // The header and its separator, then the rows up to the end of the table.
    for (const line of lines.slice(start + 2)) {
      if (!line.startsWith('|')) break
      const [owner = '', tables = ''] = line.split('|').slice(1, 3)
      for (const table of names(tables)) {
        if (map.has(table)) throw new Error(`${table} has two rows in the owners' table of ${page}`)
        map.set(table, names(owner).map(ownerPath))
      }
    }
    return map
  }
  throw new Error("no owners' table (| Owner | Tables |) in README.md or docs/")
}

const IMPORT = /import\s+(type\s+)?(?:\{([^}]*)\}|\*\s+as\s+(\w+))\s+from\s+'([^']+)'/g

/**
 * The tables a file imports from the schema (src/db/schema.ts, or one engine's): named values (types are no table),
 * or EVERY for a namespace import used for more than opening a connection (drizzle's `schema` option).
 */
function tablesImported(file: string): string[] {
  const text = read(file)
  // What the file does with a namespace is read from its code, not its imports.
  const code = text.replace(IMPORT, '')
  const tables: string[] = []
  for (const [, typeOnly, named, namespace, from] of text.matchAll(IMPORT)) {
    if (typeOnly || !/^src\/db\/schema(-sqlite|-pg)?$/.test(join(dirname(file), from!))) continue
    if (namespace) {
      const uses = code.match(new RegExp(`\\b${namespace}\\b`, 'g'))?.length ?? 0
      const opens = code.match(new RegExp(`drizzle\\([^)]*\\b${namespace}\\b`, 'g'))?.length ?? 0
      if (uses > opens) tables.push(EVERY)
      continue
    }
    for (const part of named!.split(',')) {
      const name = part.trim().split(/\s+as\s+/)[0]!
      if (name && !name.startsWith('type ')) tables.push(name)
    }
  }
  return tables
}

const sources = [...new Bun.Glob('src/**/*.ts').scanSync({ cwd: root })].filter((file) => !file.startsWith('src/db/'))

describe('each table has one owner', () => {
  const map = owners()

  test('every table the schema exports has an owner in the table, and the table names no other', () => {
    const mapped = [...map.keys()].filter((table) => table !== EVERY).sort()
    expect(mapped).toEqual(Object.keys(schema).sort())
  })

  test("the import reader sees the owners' own imports", () => {
    expect(tablesImported('src/modules/auth/repository.ts')).toContain('users')
    expect(tablesImported('src/limits/repository.ts')).toEqual(['uploadWindows'])
    // Types are no table; a connection's schema option reads none; a namespace read by name reads them all.
    expect(tablesImported('src/http/auth.ts')).toEqual([])
    expect(tablesImported('src/modules/images/read-worker.ts')).toEqual([])
    expect(tablesImported('src/db/copy.ts')).toContain(EVERY)
  })

  test('no file imports a table it does not own', () => {
    const wrong: string[] = []
    for (const file of sources) {
      for (const table of tablesImported(file)) {
        const allowed = [...(map.get(table) ?? []), ...(map.get(EVERY) ?? [])]
        if (!allowed.some((path) => file === path || (path.endsWith('/') && file.startsWith(path))))
          wrong.push(`${file} imports ${table}, owned by ${map.get(table)?.join(', ') ?? 'nobody'}`)
      }
    }
    expect(wrong).toEqual([])
  })
})
