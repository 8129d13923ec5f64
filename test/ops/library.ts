/**
 * What the CLI tests of backups, restores and upgrades share: the real CLI run as a process on a SQLite data directory
 * of its own (an environment of its own too: the suite's DATABASE_URL or S3 settings are not passed), and a small
 * library made through it (an account and three imported images).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeImage } from '../fixtures'

export const root = join(import.meta.dir, '../..')

export interface Run {
  code: number
  out: string
  err: string
}

/**
 * `bun <entry> ...args` in `cwd` with DATA_DIR `dataDir`; `entry` defaults to this checkout's src/cli.ts. Run to its
 * end before the test goes on (none of these commands needs the test's own server to answer meanwhile).
 */
export function cliAt(
  dataDir: string,
  args: string[],
  opts: { cwd?: string; entry?: string; env?: Record<string, string> } = {},
): Run {
  const run = Bun.spawnSync([process.execPath, opts.entry ?? join(root, 'src/cli.ts'), ...args], {
    cwd: opts.cwd ?? root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, ...opts.env },
  })
  return { code: run.exitCode ?? -1, out: run.stdout.toString(), err: run.stderr.toString() }
}

/** A data directory holding account `alice` with three imported images, and all three generated secrets. */
export async function makeLibrary(dataDir: string, source: string) {
  mkdirSync(source, { recursive: true })
  for (const [i, format] of (['png', 'jpeg', 'webp'] as const).entries())
    writeFileSync(join(source, `${i}.${format}`), await makeImage(format, 40 + i, 30, i))
  const made = await cliAt(dataDir, ['create-user', 'alice', 'alice@example.com', 'password123'])
  if (made.code !== 0) throw new Error(made.err)
  const imported = await cliAt(dataDir, ['import', source, '--user', 'alice'])
  if (imported.code !== 0) throw new Error(imported.err)
  // The CLI makes jwt-secret; the server makes the other two on its first start, as here.
  writeFileSync(join(dataDir, 'variant-secret'), 'v'.repeat(64), { mode: 0o600 })
  writeFileSync(join(dataDir, 'totp-key'), 't'.repeat(64), { mode: 0o600 })
}

/** `tar -tvf`'s lines as name and permissions (GNU tar, the system's: not our writer reading itself). */
export function tarModes(archive: string): Record<string, string> {
  const listed = Bun.spawnSync(['tar', '-tvf', archive])
  if (listed.exitCode !== 0) throw new Error(listed.stderr.toString())
  const lines = listed.stdout.toString().trim().split('\n')
  return Object.fromEntries(lines.map((line) => [line.split(/\s+/).at(-1)!, line.split(/\s+/)[0]!]))
}

/** A file's (or a directory's) permission bits, as `ls -ld` shows them (`-rw-------`). */
export function modeOf(path: string): string {
  const ls = Bun.spawnSync(['ls', '-ld', path])
  return ls.stdout.toString().split(/\s+/)[0]!
}
