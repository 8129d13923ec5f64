/**
 * Progress lines of the long commands: drawn on a terminal (the CLI run under a pseudo-terminal by util-linux's
 * `script`), never when stderr is a pipe, so scripts and logs get only the output they parse.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { progressLine } from '../../src/cli/progress'
import { engine } from '../../src/db/engine'
import { makeImage } from '../fixtures'
import { databaseEnv, dropDatabase } from '../helpers'
import { cliAt, makeLibrary, root } from '../ops/library'

const scratch = mkdtempSync(join(tmpdir(), 'imghost-progress-'))
const pictures = join(scratch, 'pictures')
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

beforeAll(async () => {
  mkdirSync(pictures)
  for (const i of [0, 1, 2]) writeFileSync(join(pictures, `${i}.png`), await makeImage('png', 30 + i, 30, i))
})

const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`

/** The CLI on a pseudo-terminal: what the terminal showed (stdout and stderr both). */
function onTerminal(
  dataDir: string,
  args: string[],
  env: Record<string, string> = {},
): { code: number; screen: string } {
  const command = [process.execPath, join(root, 'src/cli.ts'), ...args].map(quote).join(' ')
  const run = Bun.spawnSync(['script', '-qec', command, '/dev/null'], {
    cwd: scratch,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, TERM: 'xterm', ...env },
  })
  return { code: run.exitCode ?? -1, screen: run.stdout.toString() }
}

/** A line of a finished run: a full bar with the count and rate. */
const finished = (label: string, n: number) => new RegExp(`${label} \\[#{20}\\] ${n}/${n} [\\d.]+/s ETA 0:00`)

test('import, backup, check, rehash and restore draw a progress line on a terminal', async () => {
  const data = join(scratch, 'tty')
  expect((await cliAt(data, ['create-user', 'alice', 'alice@example.com', 'password123'])).code).toBe(0)
  const imported = onTerminal(data, ['import', pictures, '--user', 'alice'])
  expect(imported.code, imported.screen).toBe(0)
  expect(imported.screen).toMatch(finished('import', 3))

  const backup = onTerminal(data, ['backup', join(scratch, 'tty.tar')])
  expect(backup.code, backup.screen).toBe(0)
  expect(backup.screen).toMatch(finished('backup', 3))

  const check = onTerminal(data, ['check'])
  expect(check.code, check.screen).toBe(0)
  expect(check.screen).toMatch(finished('check', 3))

  // Images stored before perceptual hashes (as before migration 0008): rehash counts them, without a total.
  const db = new Database(join(data, 'imghost.sqlite'))
  db.run('UPDATE images SET phash = NULL, phash_tried = 0')
  db.close()
  const rehash = onTerminal(data, ['rehash'])
  expect(rehash.code, rehash.screen).toBe(0)
  expect(rehash.screen).toMatch(/rehash 3 [\d.]+\/s/)
  expect(rehash.screen).toContain('3 images hashed')

  // Three originals and three thumbnails.
  const restore = onTerminal(join(scratch, 'tty-restored'), ['restore', join(scratch, 'tty.tar')])
  expect(restore.code, restore.screen).toBe(0)
  expect(restore.screen).toMatch(finished('restore', 6))
})

test.skipIf(engine !== 'pg')('migrate-db draws its line over every row copied', async () => {
  const data = join(scratch, 'to-pg')
  await makeLibrary(data, join(scratch, 'to-pg-pictures'))
  const env = { ...(await databaseEnv()), JWT_SECRET: 'test-secret-'.padEnd(48, 'x') }
  try {
    const moved = onTerminal(data, ['migrate-db'], env)
    expect(moved.code, moved.screen).toBe(0)
    expect(moved.screen).toMatch(/migrate-db \[#{20}\] (\d+)\/\1 [\d.]+\/s ETA 0:00/)
  } finally {
    await dropDatabase(env)
  }
})

test('no progress line when stderr is not a terminal; --json gives a summary on stdout', async () => {
  const data = join(scratch, 'piped')
  expect((await cliAt(data, ['create-user', 'bob', 'bob@example.com', 'password123'])).code).toBe(0)
  const runs = [
    await cliAt(data, ['import', pictures, '--user', 'bob']),
    await cliAt(data, ['backup', join(scratch, 'piped.tar'), '--json']),
    await cliAt(data, ['check']),
    await cliAt(join(scratch, 'piped-restored'), ['restore', join(scratch, 'piped.tar'), '--json']),
  ]
  for (const run of runs) {
    expect(run.code, run.err).toBe(0)
    expect(run.err).not.toContain('\r')
    expect(run.err).not.toContain('ETA')
    JSON.parse(run.out)
  }
  expect(JSON.parse(runs[1]!.out)).toEqual({ target: join(scratch, 'piped.tar'), images: 3, missing: [] })
  expect(JSON.parse(runs[3]!.out)).toEqual({
    source: join(scratch, 'piped.tar'),
    into: join(scratch, 'piped-restored'),
  })
})

test('the line: a bar, the count, the rate and the time left; a counter when the total is unknown', () => {
  expect(progressLine('backup', 50, 200, 10)).toBe('backup [#####---------------] 50/200 5.0/s ETA 0:30')
  expect(progressLine('check', 3000, 363000, 1)).toBe('check [--------------------] 3000/363000 3000/s ETA 2:00')
  expect(progressLine('check', 1, 3602, 1)).toBe('check [--------------------] 1/3602 1.0/s ETA 1:00:01')
  expect(progressLine('check', 0, 10, 0)).toBe('check [--------------------] 0/10 0.0/s ETA ?')
  expect(progressLine('rehash', 42, undefined, 2)).toBe('rehash 42 21/s')
})
