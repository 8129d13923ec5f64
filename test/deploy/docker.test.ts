import { afterAll, describe, expect, test } from 'bun:test'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'

// No Docker daemon runs the tests: the image's steps are checked instead. The Dockerfile is read as Docker reads it,
// its install command is run as written on a copy of what its COPY lines bring in, and what it installed is compared
// with the lockfiles. The compose files are parsed by a YAML parser and what they name is looked for on disk.

const ROOT = join(import.meta.dir, '../..')
const scratch = mkdtempSync(join(tmpdir(), 'imghost-docker-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

interface Instruction {
  op: string
  args: string
}
interface Stage {
  image: string
  name?: string
  steps: Instruction[]
}

/** The Dockerfile's stages and their instructions: comments dropped, continued lines joined (as Docker reads them). */
function stages(text: string): Stage[] {
  const out: Stage[] = []
  const logical = text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
  for (const line of logical.split('\n').map((l) => l.trim())) {
    if (!line) continue
    const op = line.split(/\s+/)[0].toUpperCase()
    const args = line.slice(op.length).trim()
    if (op === 'FROM') {
      const [image, as, name] = args.split(/\s+/).filter((word) => !word.startsWith('--platform'))
      out.push({ image, name: as?.toUpperCase() === 'AS' ? name : undefined, steps: [] })
    } else out.at(-1)?.steps.push({ op, args })
  }
  return out
}

const dockerfile = stages(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))
const stageNames = new Set(dockerfile.map((s) => s.name).filter(Boolean))
/** The stage that installs the dependencies: the one whose RUN installs packages. */
const INSTALL = /\b(bun install|npm ci|npm install)\b/
const deps = dockerfile.find((s) => s.steps.some((step) => step.op === 'RUN' && INSTALL.test(step.args)))!
const installs = deps.steps.filter((step) => step.op === 'RUN').map((step) => step.args)
/** A COPY's sources (its last word is the destination; flags such as --chown or --from are not sources). */
const copySources = (step: Instruction) =>
  step.args
    .split(/\s+/)
    .filter((w) => !w.startsWith('--'))
    .slice(0, -1)
const depsCopies = deps.steps.filter((s) => s.op === 'COPY' && !s.args.includes('--from=')).flatMap(copySources)

const BUN_VERSION: string = JSON.parse(readFileSync(join(ROOT, 'node_modules/bun/package.json'), 'utf8')).version

describe('Dockerfile', () => {
  test('every base image is pinned to a full version: the Bun the tests run on', () => {
    const bases = dockerfile.map((s) => s.image).filter((image) => !stageNames.has(image))
    expect(bases.length).toBeGreaterThan(0)
    for (const image of bases) {
      if (/@sha256:[0-9a-f]{64}$/.test(image)) continue
      // A tag with a full x.y.z (and maybe a variant): `oven/bun:1`, `oven/bun:1.4` or `latest` move under the build.
      const tag = /^[^:@]+:(\d+\.\d+\.\d+)(-[a-z0-9.-]+)?$/.exec(image)
      expect(tag, `${image} is not pinned to a version`).not.toBeNull()
      if (image.startsWith('oven/bun:')) expect(tag![1], `${image} is not Bun ${BUN_VERSION}`).toBe(BUN_VERSION)
    }
  })

  test('the install honours the lockfile: frozen, production only, no fallback', () => {
    expect(installs.length).toBeGreaterThan(0)
    for (const command of installs) {
      // A fallback (`|| bun install`) would install whatever the registry has when the lockfile does not fit.
      expect(command).not.toMatch(/\|\||;|&&/)
      if (/\bbun install\b/.test(command)) {
        expect(command).toContain('--frozen-lockfile')
        expect(command).toContain('--production')
        expect(depsCopies).toContain('bun.lock')
      } else {
        expect(command).toMatch(/\bnpm ci\b.*--omit=dev/)
        expect(depsCopies).toContain('package-lock.json')
      }
    }
  })

  test("every file a COPY reads exists and is in the build context (.dockerignore's patterns)", () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'))
    const sources = dockerfile.flatMap((s) =>
      s.steps.filter((step) => step.op === 'COPY' && !step.args.includes('--from=')).flatMap(copySources),
    )
    expect(sources).toContain('src')
    for (const source of sources) {
      expect(existsSync(join(ROOT, source)), source).toBe(true)
      for (const pattern of ignored) {
        const glob = new Bun.Glob(pattern)
        expect(glob.match(source) || source.startsWith(`${pattern}/`), `${source} is ignored by ${pattern}`).toBe(false)
      }
    }
  })

  test('its install command, run on a copy of what the stage copies, installs exactly the locked production versions', async () => {
    const work = join(scratch, 'install')
    for (const source of depsCopies) cpSync(join(ROOT, source), join(work, source), { recursive: true })
    // The command as written, by a shell, with this Bun first on the PATH (the image's `bun`).
    const started = performance.now()
    for (const command of installs) {
      // Synchronously: nothing else runs in this file meanwhile.
      const run = Bun.spawnSync(['sh', '-c', command], {
        cwd: work,
        env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}` },
      })
      expect(run.exitCode, `${command}\n${run.stdout}\n${run.stderr}`).toBe(0)
    }
    console.info(`install: ${Math.round(performance.now() - started)} ms`)

    const installed = installedPackages(join(work, 'node_modules'))
    const lockedHere = depsCopies.includes('bun.lock') ? bunLockVersions() : npmLockVersions({ dev: false })
    const production = npmLockVersions({ dev: false })
    expect(installed.size).toBeGreaterThan(20)
    for (const [name, versions] of installed) {
      for (const version of versions) {
        // Each package at a version its lockfile pins, and one npm's lockfile gives a production dependency.
        expect(lockedHere.get(name)?.has(version), `${name}@${version} is not in the lockfile`).toBe(true)
        expect(production.get(name)?.has(version), `${name}@${version} is no locked production package`).toBe(true)
      }
    }
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
    const npmLock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
    for (const name of Object.keys(manifest.dependencies)) {
      const top = JSON.parse(readFileSync(join(work, 'node_modules', name, 'package.json'), 'utf8'))
      expect(top.version, name).toBe(npmLock.packages[`node_modules/${name}`].version)
    }
    for (const name of Object.keys(manifest.devDependencies)) {
      // A dev dependency gets in only as some production package's own dependency.
      if (installed.has(name)) expect(production.has(name), `dev dependency ${name} installed`).toBe(true)
    }
  }, 180_000)

  test('bun.lock and package-lock.json pin the same version of every package', () => {
    const bun = bunLockVersions()
    const npm = npmLockVersions({ dev: true })
    // What to do when they differ (docs/operations.md, Docker): bun.lock made again from npm's lockfile.
    const remake = 'the lockfiles differ: rm bun.lock && bun install --lockfile-only'
    expect(bun.size).toBeGreaterThan(100)
    for (const [name, versions] of bun) {
      for (const version of versions) expect(npm.get(name)?.has(version), `${name}@${version}: ${remake}`).toBe(true)
    }
    // Every production package npm locks is in bun.lock too.
    for (const [name, versions] of npmLockVersions({ dev: false })) {
      for (const version of versions) expect(bun.get(name)?.has(version), `${name}@${version}: ${remake}`).toBe(true)
    }
  })
})

/** name -> versions, from every package.json at a package's root under node_modules (nested ones too). */
function installedPackages(modules: string, found = new Map<string, Set<string>>()) {
  if (!existsSync(modules)) return found
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue
    const dirs = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((n) => join(entry, n)) : [entry]
    for (const dir of dirs) {
      const path = join(modules, dir)
      if (!statSync(path).isDirectory() || !existsSync(join(path, 'package.json'))) continue
      const { name, version } = JSON.parse(readFileSync(join(path, 'package.json'), 'utf8'))
      if (!found.has(name)) found.set(name, new Set())
      found.get(name)!.add(version)
      installedPackages(join(path, 'node_modules'), found)
    }
  }
  return found
}

const addTo = (map: Map<string, Set<string>>, name: string, version: string) => {
  if (!map.has(name)) map.set(name, new Set())
  map.get(name)!.add(version)
}

/** name -> versions of package-lock.json's packages (`dev: false`: only those a production install brings in). */
function npmLockVersions({ dev }: { dev: boolean }) {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
  const out = new Map<string, Set<string>>()
  for (const [path, entry] of Object.entries<{ version?: string; name?: string; dev?: boolean }>(lock.packages)) {
    if (!path || !entry.version || (!dev && entry.dev)) continue
    addTo(out, entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length), entry.version)
  }
  return out
}

/** name -> versions of bun.lock's packages (each entry's first item is `name@version`). */
function bunLockVersions() {
  const lock = Bun.JSONC.parse(readFileSync(join(ROOT, 'bun.lock'), 'utf8')) as { packages: Record<string, [string]> }
  const out = new Map<string, Set<string>>()
  for (const [id] of Object.values(lock.packages)) {
    const at = id.lastIndexOf('@')
    addTo(out, id.slice(0, at), id.slice(at + 1))
  }
  return out
}

describe('compose files', () => {
  const files = readdirSync(join(ROOT, 'deploy')).filter((f) => /^compose.*\.ya?ml$/.test(f))
  const read = (file: string) => Bun.YAML.parse(readFileSync(join(ROOT, 'deploy', file), 'utf8')) as Compose

  interface Service {
    image?: string
    build?: string | { context?: string; dockerfile?: string }
    volumes?: (string | { type?: string; source?: string; target: string })[]
    depends_on?: string[] | Record<string, unknown>
    environment?: Record<string, string> | string[]
  }
  interface Compose {
    services: Record<string, Service>
    volumes?: Record<string, unknown>
  }

  test('one for one instance and one to scale out, each parsing as YAML', () => {
    expect(files.sort()).toEqual(['compose.scale.yaml', 'compose.yaml'])
    for (const file of files) expect(Object.keys(read(file).services ?? {}).length, file).toBeGreaterThan(0)
  })

  test('every file, build context, volume and service they name exists', () => {
    for (const file of files) {
      const compose = read(file)
      const base = join(ROOT, 'deploy')
      for (const [name, service] of Object.entries(compose.services)) {
        expect(service.image ?? service.build, `${file}: ${name} has no image or build`).toBeDefined()
        if (service.build) {
          const build = typeof service.build === 'string' ? { context: service.build } : service.build
          const context = resolve(base, build.context ?? '.')
          expect(existsSync(join(context, build.dockerfile ?? 'Dockerfile')), `${file}: ${name}'s build`).toBe(true)
        }
        for (const volume of service.volumes ?? []) {
          const source = typeof volume === 'string' ? volume.split(':')[0] : volume.source
          if (!source) continue
          if (/^[./~]/.test(source)) expect(existsSync(resolve(base, source)), `${file}: ${source}`).toBe(true)
          else expect(Object.keys(compose.volumes ?? {}), `${file}: volume ${source} not declared`).toContain(source)
        }
        const needs = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {})
        for (const other of needs)
          expect(Object.keys(compose.services), `${file}: ${name} needs ${other}`).toContain(other)
      }
    }
  })

  test('the scale-out file takes every variable it needs from deploy/example.env', () => {
    const text = readFileSync(join(ROOT, 'deploy/compose.scale.yaml'), 'utf8')
    const example = readFileSync(join(ROOT, 'deploy/example.env'), 'utf8')
    const given = new Set([...example.matchAll(/^([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]))
    // `${NAME}` without a default (`$$` is compose's escape for a literal `$`).
    const needed = [...text.matchAll(/(?<!\$)\$\{([A-Z_][A-Z0-9_]*)\}/g)].map((m) => m[1])
    expect(needed.length).toBeGreaterThan(0)
    for (const name of needed) expect(given.has(name), name).toBe(true)
  })

  test('compose.yaml: one instance of the image on SQLite, its data in one volume', () => {
    const compose = read('compose.yaml')
    const services = Object.values(compose.services)
    expect(services).toHaveLength(1)
    const [app] = services
    expect(resolve(join(ROOT, 'deploy'), String(app.build))).toBe(resolve(ROOT))
    expect(app.volumes).toEqual(['imghost-data:/app/data'])
    expect(Object.keys(compose.volumes ?? {})).toEqual(['imghost-data'])
    const env = JSON.stringify(app.environment ?? {})
    expect(env).not.toContain('DATABASE_URL')
    expect(env).not.toContain('STORAGE')
  })

  test('every deploy/ file the docs and the deployment files name exists', () => {
    const docs = readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f))
    const readers = [
      'README.md',
      'Dockerfile',
      ...docs,
      ...readdirSync(join(ROOT, 'deploy')).map((f) => join('deploy', f)),
    ]
    let named = 0
    for (const file of readers) {
      const text = readFileSync(join(ROOT, file), 'utf8')
      for (const [path] of text.matchAll(/(?<![\w/])deploy\/[A-Za-z0-9._-]+[A-Za-z0-9]/g)) {
        named++
        // deploy/.env is the operator's copy of deploy/example.env, never in the repository.
        if (path === 'deploy/.env') continue
        expect(existsSync(join(ROOT, path)), `${relative(ROOT, join(ROOT, file))} names ${path}`).toBe(true)
      }
    }
    expect(named).toBeGreaterThan(3)
  })
})
