import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, posix } from 'node:path'

// There is no Docker engine here: the Dockerfile is parsed and checked against the repository instead, so a renamed
// file, a stage typo or a lost USER/HEALTHCHECK line fails here rather than at the operator's `docker build`.

const root = join(import.meta.dir, '..', '..')

interface Instruction {
  keyword: string
  args: string
  line: number
}

/** Instructions with continuation lines joined and comments dropped (parser directives are comments too). */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = []
  let buffer = ''
  let start = 0
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim()
    if (line.startsWith('#') || (line === '' && !buffer)) return
    if (!buffer) start = i + 1
    if (line.endsWith('\\')) {
      buffer += `${line.slice(0, -1)} `
      return
    }
    buffer += line
    const match = /^(\S+)\s*(.*)$/.exec(buffer.trim())
    if (match) out.push({ keyword: match[1].toUpperCase(), args: match[2].trim(), line: start })
    buffer = ''
  })
  return out
}

/** Leading `--flag=value` options, then the rest as a JSON array (exec form) or split on whitespace. */
function splitArgs(args: string): { flags: Record<string, string>; items: string[]; json: boolean } {
  const flags: Record<string, string> = {}
  let rest = args
  for (let m = /^--([\w-]+)(?:=(\S+))?\s*/.exec(rest); m; m = /^--([\w-]+)(?:=(\S+))?\s*/.exec(rest)) {
    flags[m[1]] = m[2] ?? 'true'
    rest = rest.slice(m[0].length)
  }
  if (rest.startsWith('[')) return { flags, items: JSON.parse(rest) as string[], json: true }
  return { flags, items: rest.split(/\s+/).filter(Boolean), json: false }
}

/** `ENV a=b c="d e"` and the legacy `ENV a b`. */
function parseEnv(args: string): Record<string, string> {
  if (!/^[\w.-]+=/.test(args)) {
    const [name, ...value] = args.split(/\s+/)
    return { [name]: value.join(' ') }
  }
  const env: Record<string, string> = {}
  for (const m of args.matchAll(/([\w.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g))
    env[m[1]] = m[2].startsWith('"') ? JSON.parse(m[2]) : m[2]
  return env
}

interface Stage {
  index: number
  image: string
  name?: string
  line: number
  instructions: Instruction[]
}

function stagesOf(instructions: Instruction[]): Stage[] {
  const stages: Stage[] = []
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)
      stages.push({
        index: stages.length,
        image: m?.[1] ?? ins.args,
        name: m?.[2]?.toLowerCase(),
        line: ins.line,
        instructions: [],
      })
    } else if (stages.length) {
      stages.at(-1)!.instructions.push(ins)
    } else if (ins.keyword !== 'ARG') {
      throw new Error(`line ${ins.line}: ${ins.keyword} before the first FROM`)
    }
  }
  return stages
}

/** Working directory at each instruction of a stage (WORKDIR is relative to the previous one, `/` at first). */
function withWorkdirs(stage: Stage): { ins: Instruction; workdir: string }[] {
  let workdir = '/'
  return stage.instructions.map((ins) => {
    if (ins.keyword === 'WORKDIR') workdir = posix.resolve(workdir, ins.args)
    return { ins, workdir }
  })
}

/** .dockerignore rules in order; the last rule matching a path (or one of its parent directories) decides. */
function dockerignore(): (path: string) => boolean {
  const file = join(root, '.dockerignore')
  if (!existsSync(file)) return () => false
  const rules = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!')
      const pattern = posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, '')).replace(/\/+$/, '')
      const source = pattern
        .split('**')
        .map((part) =>
          part
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
        )
        .join('.*')
      return { negate, regex: new RegExp(`^${source}$`) }
    })
  return (path) => {
    const parts = posix
      .normalize(path)
      .replace(/^\.\/?/, '')
      .split('/')
    let ignored = false
    for (const rule of rules) {
      for (let i = 1; i <= parts.length; i++) {
        if (rule.regex.test(parts.slice(0, i).join('/'))) ignored = !rule.negate
      }
    }
    return ignored
  }
}

const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8')
const instructions = parseDockerfile(dockerfile)
const stages = stagesOf(instructions)
const final = stages.at(-1)!
const finalSteps = withWorkdirs(final)
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword)
const one = (stage: Stage, keyword: string) => {
  const found = all(stage, keyword)
  expect(found.length, `${keyword} in the final stage`).toBeGreaterThanOrEqual(1)
  return found.at(-1)!
}
const finalEnv = Object.assign({}, ...all(final, 'ENV').map((i) => parseEnv(i.args))) as Record<string, string>
const isIgnored = dockerignore()

/** Every path of the final image that a COPY fills, with where it comes from. */
const copies = stages.flatMap((stage) =>
  withWorkdirs(stage)
    .filter(({ ins }) => ins.keyword === 'COPY' || ins.keyword === 'ADD')
    .map(({ ins, workdir }) => {
      const { flags, items } = splitArgs(ins.args)
      const dest = items.at(-1)!
      return {
        stage,
        ins,
        from: flags.from,
        sources: items.slice(0, -1),
        dest: posix.resolve(workdir, dest),
        destIsDir: dest.endsWith('/') || items.length > 2,
      }
    }),
)

/**
 * The repository file that ends up at `imagePath` in the final image, if a COPY from the build context puts one there:
 * a directory source copies its contents into the destination, a file source lands in it (or at it).
 */
function repoFileAt(imagePath: string): string | undefined {
  for (const copy of copies.filter((c) => c.stage === final && !c.from).reverse()) {
    for (const source of copy.sources) {
      const isDir = existsSync(join(root, source)) && statSync(join(root, source)).isDirectory()
      const target = isDir || !copy.destIsDir ? copy.dest : posix.join(copy.dest, posix.basename(source))
      if (imagePath !== target && !imagePath.startsWith(`${target}/`)) continue
      const candidate = join(root, source, posix.relative(target, imagePath))
      if (existsSync(candidate) && statSync(candidate).isFile()) return candidate
    }
  }
  return undefined
}

describe('Dockerfile', () => {
  test('parses: two or more stages, each `FROM oven/bun... AS name`, with unique names', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    for (const stage of stages) {
      expect(stage.image, `line ${stage.line}`).toMatch(/^(docker\.io\/)?oven\/bun(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$/)
      expect(stage.name, `line ${stage.line}: FROM without AS name`).toMatch(/^[a-z][\w.-]*$/)
    }
    const names = stages.map((s) => s.name)
    expect(new Set(names).size).toBe(names.length)
    for (const ins of instructions) expect(ins.keyword, `line ${ins.line}`).not.toBe('ADD') // COPY says what it does
  })

  test('every COPY source from the build context exists and is not excluded by .dockerignore', () => {
    const local = copies.filter((c) => !c.from)
    expect(local.length).toBeGreaterThan(0)
    for (const { ins, sources } of local) {
      expect(sources.length, `line ${ins.line}`).toBeGreaterThan(0)
      for (const source of sources) {
        const matches = /[*?[]/.test(source)
          ? [...new Bun.Glob(source).scanSync({ cwd: root, onlyFiles: false })]
          : [source]
        expect(matches.length, `line ${ins.line}: ${source} matches nothing`).toBeGreaterThan(0)
        for (const path of matches) {
          expect(existsSync(join(root, path)), `line ${ins.line}: ${path} does not exist`).toBe(true)
          expect(isIgnored(path), `line ${ins.line}: ${path} is excluded by .dockerignore`).toBe(false)
        }
      }
    }
  })

  test('COPY --from names an earlier stage, and copies what that stage produced', () => {
    for (const { stage, ins, from, sources } of copies.filter((c) => c.from)) {
      const source = stages.find((s) => s.name === from!.toLowerCase() || String(s.index) === from)
      expect(source, `line ${ins.line}: --from=${from} is no stage`).toBeDefined()
      expect(source!.index, `line ${ins.line}: --from=${from} is not an earlier stage`).toBeLessThan(stage.index)
      // Produced there: under a directory a RUN worked in, or under a path a COPY filled.
      const produced = [
        ...withWorkdirs(source!)
          .filter(({ ins: i }) => i.keyword === 'RUN')
          .map(({ workdir }) => workdir),
        ...copies.filter((c) => c.stage === source).map((c) => c.dest),
      ]
      for (const path of sources) {
        expect(posix.isAbsolute(path), `line ${ins.line}: ${path} should be absolute`).toBe(true)
        expect(
          produced.some((p) => path === p || path.startsWith(p.endsWith('/') ? p : `${p}/`)),
          `line ${ins.line}: nothing in ${from} produces ${path}`,
        ).toBe(true)
      }
    }
  })

  test('production dependencies only: the runtime image already has Bun, so the `bun` npm package is a dev dependency', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
    expect(Object.keys(pkg.dependencies)).not.toContain('bun')
    const install = instructions.find((i) => i.keyword === 'RUN' && /\bbun install\b/.test(i.args))
    expect(install?.args).toContain('--production')
    // Multi-stage: the install runs in an earlier stage and the runtime stage copies only its node_modules.
    expect(
      final.instructions.some((i) => i.keyword === 'RUN' && /\bbun (install|add|i)\b/.test(i.args)),
      'bun install in the runtime stage',
    ).toBe(false)
    const modules = copies.find(
      (c) => c.stage === final && c.dest === posix.join(finalSteps.at(-1)!.workdir, 'node_modules'),
    )
    expect(modules?.from, 'node_modules of the runtime stage come from an earlier stage').toBeDefined()
  })

  test('runs as a non-root user that owns the data volume', () => {
    const user = one(final, 'USER').args.split(':')[0]
    expect(['root', '0', '']).not.toContain(user)
    const userIndex = final.instructions.indexOf(one(final, 'USER'))
    const cmdIndex = final.instructions.indexOf(one(final, 'CMD'))
    expect(userIndex).toBeLessThan(cmdIndex)

    const dataDir = finalEnv.DATA_DIR
    expect(dataDir).toMatch(/^\//)
    const volume = one(final, 'VOLUME')
    const { items } = splitArgs(volume.args)
    expect(items).toContain(dataDir)
    // Changes to a volume's directory after VOLUME are discarded: the chown has to come first.
    const chown = final.instructions.findIndex(
      (i) => i.keyword === 'RUN' && i.args.includes('chown') && i.args.includes(dataDir) && i.args.includes(user),
    )
    expect(chown, `no RUN chown of ${dataDir} to ${user}`).toBeGreaterThanOrEqual(0)
    expect(chown).toBeLessThan(final.instructions.indexOf(volume))
  })

  test('HEALTHCHECK asks /healthz on the configured port; EXPOSE matches PORT', () => {
    const health = one(final, 'HEALTHCHECK').args
    expect(health).toMatch(/\bCMD\b/)
    expect(health).toContain('/healthz')
    expect(health.includes('PORT') || health.includes(finalEnv.PORT)).toBe(true)
    expect(splitArgs(one(final, 'EXPOSE').args).items.map((p) => p.split('/')[0])).toContain(finalEnv.PORT)
  })

  test('STOPSIGNAL SIGTERM, and the server is PID 1 (exec-form CMD, no shell in between) so it gets the signal', () => {
    expect(one(final, 'STOPSIGNAL').args).toBe('SIGTERM')
    expect(all(final, 'ENTRYPOINT')).toHaveLength(0)
    const cmd = splitArgs(one(final, 'CMD').args)
    expect(cmd.json).toBe(true)
    expect(cmd.items[0]).toBe('bun')
    // The script it runs is the server entry point, copied into the image from the repository.
    const script = cmd.items.slice(1).find((a) => !a.startsWith('-'))!
    const inImage = posix.resolve(finalSteps.at(-1)!.workdir, script)
    expect(inImage).toBe(posix.resolve(finalSteps.at(-1)!.workdir, 'src/index.ts'))
    expect(repoFileAt(inImage), `${inImage} is not copied into the image from the repository`).toBeDefined()
  })
})
