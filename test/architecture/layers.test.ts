import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

/**
 * The layering rules of docs/design.md, read from the import statements of src/**\/*.ts (type-only imports
 * and `import()` included): each rule lists the imports that break it, and passes when there are none.
 */

const root = join(import.meta.dir, '..', '..')
const files = [...new Bun.Glob('src/**/*.ts').scanSync({ cwd: root })].filter((file) => !file.endsWith('.d.ts')).sort()

interface Import {
  /** The importing file, from the repository's root (`src/http/errors.ts`). */
  file: string
  /** A file of the app from the root without its extension (`src/errors`), or a package as written (`elysia`). */
  target: string
}

/**
 * The modules a source names: `import ... from`, `export ... from` and bare `import '...'` statements (each starts a
 * line, as the formatter writes them), and `import('...')` anywhere.
 */
const SPECIFIERS = [
  /^(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm,
  /^import\s*['"]([^'"]+)['"]/gm,
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
]
const specifiers = (source: string) => SPECIFIERS.flatMap((pattern) => [...source.matchAll(pattern)].map((m) => m[1]))

/** Every import of every file; relative ones resolved to the path they name. */
const imports: Import[] = files.flatMap((file) =>
  specifiers(readFileSync(join(root, file), 'utf8')).map((name) => ({
    file,
    target: name.startsWith('.') ? relative(root, join(root, dirname(file), name)) : name,
  })),
)

const under = (folder: string) => (path: string) => path.startsWith(`src/${folder}/`)
const isApp = (path: string) => path.startsWith('src/')

/** The imports of the files `from` picks that `forbidden` picks, as `file -> target` (empty: the rule holds). */
const breaking = (from: (file: string) => boolean, forbidden: (target: string) => boolean) =>
  imports.filter((i) => from(i.file) && forbidden(i.target)).map((i) => `${i.file} -> ${i.target}`)

/** Any of the folders. */
const anyOf =
  (...folders: string[]) =>
  (path: string) =>
    folders.some((folder) => under(folder)(path))

/** A feature's controller files: its routes (index.ts, *-routes.ts) and their schemas (model.ts). */
const isController = (file: string) => /^src\/modules\/[^/]+\/(index|model|[a-z-]+-routes)\.ts$/.test(file)
const isElysia = (target: string) =>
  target === 'elysia' || target.startsWith('elysia/') || target.startsWith('@elysiajs/')

describe('layers', () => {
  test('the rules read imports (the scan found the files and their imports)', () => {
    expect(files.length).toBeGreaterThan(100)
    expect(imports).toContainEqual({ file: 'src/app.ts', target: 'src/http/errors' })
    expect(imports).toContainEqual({ file: 'src/app.ts', target: 'elysia' })
  })

  test('http/ imports no module', () => {
    expect(breaking(under('http'), under('modules'))).toEqual([])
  })

  test('media/ imports no moderation/, db/, modules/ or http/', () => {
    expect(breaking(under('media'), anyOf('moderation', 'db', 'modules', 'http'))).toEqual([])
  })

  test('storage/ imports no db/ or modules/', () => {
    expect(breaking(under('storage'), anyOf('db', 'modules'))).toEqual([])
  })

  test('db/ imports no modules/ or http/', () => {
    expect(breaking(under('db'), anyOf('modules', 'http'))).toEqual([])
  })

  test('moderation/ imports no db/ or modules/', () => {
    expect(breaking(under('moderation'), anyOf('db', 'modules'))).toEqual([])
  })

  test('net/ imports no http/ or modules/', () => {
    expect(breaking(under('net'), anyOf('http', 'modules'))).toEqual([])
  })

  test('lib/ imports nothing of the app but lib/', () => {
    expect(breaking(under('lib'), (target) => isApp(target) && !under('lib')(target))).toEqual([])
  })

  test('config.ts and errors.ts import nothing of the app', () => {
    expect(breaking((file) => file === 'src/config.ts' || file === 'src/errors.ts', isApp)).toEqual([])
  })

  test('services and every other non-controller file of a feature import no elysia', () => {
    expect(breaking((file) => under('modules')(file) && !isController(file), isElysia)).toEqual([])
  })
})
