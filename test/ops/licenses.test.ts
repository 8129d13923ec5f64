import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

// Every package the server runs (package.json's `dependencies` and everything they pull in) must be under a license
// that lets imghost be MIT-licensed and shipped as one binary or image. A new dependency, or a new version of one,
// under any other license fails here, before it is merged (README: License).

const root = join(import.meta.dir, '..', '..')

/** Permissive licenses: each only asks that its notice is kept. */
const ALLOWED = new Set(['MIT', 'MIT-0', 'ISC', 'BSD-2-Clause', 'BSD-3-Clause', 'Apache-2.0', '0BSD', 'BlueOak-1.0.0'])
/**
 * LGPL only for two libraries used unmodified, which the LGPL allows a work under another license to use as long as
 * the user can replace the library with another build of it (README: License):
 * - libvips as sharp ships it: a prebuilt shared library that sharp's addon links dynamically (also in the single
 *   binary, which loads it from a file of its own: src/media/libvips-preload.ts);
 * - libheif-js, libheif compiled to wasm with its JS glue, which heic-decode loads at run time from its own package
 *   (src/media/heic.ts), so any other build of it can be put in its place. The single binary bundles it with the JS;
 *   there the imghost source, public, is the means to relink: `bun run build:binary` over another libheif-js.
 * Its license field says LGPL-3.0 (SPDX's older id of LGPL-3.0-only), libvips' LGPL-3.0-or-later; each is allowed
 * only under the id its package declares.
 */
const LGPL_ALLOWED: { name: RegExp; id: string }[] = [
  { name: /^@img\/sharp-libvips-/, id: 'LGPL-3.0-or-later' },
  { name: /^libheif-js$/, id: 'LGPL-3.0' },
]
const lgplAllowed = (name: string, id: string) => LGPL_ALLOWED.some((lgpl) => lgpl.id === id && lgpl.name.test(name))

type Manifest = {
  name: string
  version: string
  license?: unknown
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}

/** Where Node and Bun find `name` from a package at `from`: its own node_modules, then each one above it. */
function resolvePackage(from: string, name: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'node_modules', name, 'package.json')
    if (existsSync(manifest)) return dirname(manifest)
    if (dir === root || dir === dirname(dir)) return null
  }
}

/**
 * The production tree: dependencies, the optional ones that are installed (sharp's binaries for this platform) and
 * the peer dependencies a package requires (elysia's file-type, nsfwjs's buffer), which npm installs with it. Returns
 * each package's manifest by its directory, and what is required but not installed.
 */
function productionTree() {
  const packages = new Map<string, Manifest>()
  const missing: string[] = []
  const visit = (from: string, needs: Record<string, string>, optional: Set<string>) => {
    for (const name of Object.keys(needs)) {
      const dir = resolvePackage(from, name)
      if (!dir) {
        if (!optional.has(name)) missing.push(`${name} (needed by ${from})`)
        continue
      }
      if (packages.has(dir)) continue
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
      packages.set(dir, manifest)
      const peers = Object.keys(manifest.peerDependencies ?? {}).filter(
        (peer) => !manifest.peerDependenciesMeta?.[peer]?.optional,
      )
      visit(
        dir,
        {
          ...Object.fromEntries(peers.map((peer) => [peer, '*'])),
          ...manifest.dependencies,
          ...manifest.optionalDependencies,
        },
        new Set(Object.keys(manifest.optionalDependencies ?? {})),
      )
    }
  }
  const app = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest
  visit(root, app.dependencies ?? {}, new Set())
  return { packages, missing }
}

/** Whether an SPDX expression (`MIT`, `(MIT OR Apache-2.0)`, `Apache-2.0 AND MIT`) is satisfied by the ids allowed. */
function satisfies(expression: string, allowed: (id: string) => boolean): boolean {
  const tokens = expression.match(/\(|\)|[^\s()]+/g) ?? []
  let at = 0
  const term = (): boolean => {
    const token = tokens[at++]
    if (token !== '(') return token !== undefined && token !== ')' && allowed(token)
    const value = either()
    if (tokens[at++] !== ')') throw new Error(`unbalanced parentheses in "${expression}"`)
    return value
  }
  const both = (): boolean => {
    let value = term()
    while (tokens[at] === 'AND') {
      at++
      value = term() && value
    }
    return value
  }
  const either = (): boolean => {
    let value = both()
    while (tokens[at] === 'OR') {
      at++
      value = both() || value
    }
    return value
  }
  const value = either()
  if (at !== tokens.length) throw new Error(`cannot read the license "${expression}"`)
  return value
}

/** Whether a package's `license` field allows it in the production tree. */
function licenseAllowed(name: string, license: unknown): boolean {
  if (typeof license !== 'string') return false // none, UNLICENSED or a legacy object: look at it by hand
  return satisfies(license, (id) => ALLOWED.has(id) || lgplAllowed(name, id))
}

describe('licenses of the production dependencies', () => {
  const { packages, missing } = productionTree()

  test('the whole tree is read: every required package is installed, the deep ones too', () => {
    expect(missing).toEqual([])
    const names = new Set([...packages.values()].map((manifest) => manifest.name))
    // Direct, transitive (sharp -> detect-libc, elysia's peer file-type -> strtok3) and the platform's libvips.
    for (const name of [
      'elysia',
      'sharp',
      'detect-libc',
      'file-type',
      'strtok3',
      'nodemailer',
      '@tensorflow/tfjs-core',
    ])
      expect(names.has(name), name).toBe(true)
    for (const lgpl of LGPL_ALLOWED)
      expect(
        [...names].some((name) => lgpl.name.test(name)),
        String(lgpl.name),
      ).toBe(true)
    // Development tools are not in it.
    for (const name of ['@biomejs/biome', 'drizzle-kit', 'playwright-core', 's3rver'])
      expect(names.has(name), name).toBe(false)
  })

  test('every package is under an allowed license', () => {
    const refused = [...packages.values()]
      .filter((manifest) => !licenseAllowed(manifest.name, manifest.license))
      .map((manifest) => `${manifest.name}@${manifest.version}: ${JSON.stringify(manifest.license ?? null)}`)
    expect(refused).toEqual([])
  })

  test('the rule: permissive ids, SPDX AND/OR, LGPL for libvips and libheif-js alone, nothing else', () => {
    expect(licenseAllowed('a', 'MIT')).toBe(true)
    expect(licenseAllowed('a', '(MIT OR GPL-3.0-only)')).toBe(true)
    expect(licenseAllowed('a', 'Apache-2.0 AND MIT')).toBe(true)
    expect(licenseAllowed('a', 'MIT AND GPL-3.0-only')).toBe(false)
    expect(licenseAllowed('a', 'GPL-3.0-only')).toBe(false)
    expect(licenseAllowed('a', 'AGPL-3.0-or-later')).toBe(false)
    expect(licenseAllowed('a', 'SSPL-1.0')).toBe(false)
    expect(licenseAllowed('a', 'UNLICENSED')).toBe(false)
    expect(licenseAllowed('a', undefined)).toBe(false)
    expect(licenseAllowed('a', { type: 'MIT' })).toBe(false)
    expect(licenseAllowed('@img/sharp-libvips-linux-x64', 'LGPL-3.0-or-later')).toBe(true)
    expect(licenseAllowed('some-other-lib', 'LGPL-3.0-or-later')).toBe(false)
    expect(licenseAllowed('libheif-js', 'LGPL-3.0')).toBe(true)
    expect(licenseAllowed('libheif-js-fork', 'LGPL-3.0')).toBe(false)
    expect(licenseAllowed('some-other-lib', 'LGPL-3.0')).toBe(false)
    // Each under the id it declares: a libheif-js relicensed to GPL, or a libvips to LGPL-2.1, is looked at first.
    expect(licenseAllowed('libheif-js', 'GPL-3.0-only')).toBe(false)
    expect(licenseAllowed('@img/sharp-libvips-linux-x64', 'LGPL-3.0')).toBe(false)
  })
})
