import { cpSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'

const ROOT = join(import.meta.dir, '../..')

/**
 * Runs `drizzle-kit generate` for `schema` over a copy (in `scratch`) of the committed `migrations`: its output, and
 * whether it wrote no file (the committed migrations match the schema).
 */
export function generateOverCopy(opts: { dialect: string; schema: string; migrations: string; scratch: string }) {
  const out = join(opts.scratch, 'migrations')
  cpSync(join(ROOT, opts.migrations), out, { recursive: true })
  const before = readdirSync(out).sort()
  // drizzle-kit reads --out relative to the working directory.
  const run = Bun.spawnSync(
    [
      join(ROOT, 'node_modules/.bin/drizzle-kit'),
      'generate',
      '--dialect',
      opts.dialect,
      '--schema',
      opts.schema,
      '--out',
      relative(ROOT, out),
    ],
    { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' },
  )
  const output = `${run.stdout.toString()}${run.stderr.toString()}`
  return { exitCode: run.exitCode, output, unchanged: readdirSync(out).sort().join() === before.join() }
}
