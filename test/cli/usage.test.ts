/**
 * The CLI's usage as an operator meets it, run as a process in an empty working directory: `--help` and `-h` on every
 * command print its usage and do nothing else (no file made, no database opened); unknown options, unknown commands
 * and missing arguments exit 2 with one line; a failure prints one line, its stack only with `--debug`.
 */
import { afterAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cliAt } from '../ops/library'

const scratch = mkdtempSync(join(tmpdir(), 'imghost-usage-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The CLI in a working directory of its own, with a DATA_DIR that does not exist yet. */
function sandbox(name: string) {
  const cwd = join(scratch, name)
  mkdirSync(cwd)
  const dataDir = join(cwd, 'data')
  return { cwd, dataDir, run: (...args: string[]) => cliAt(dataDir, args, { cwd }) }
}

const COMMANDS = [
  'version',
  'create-admin',
  'create-user',
  'set-role',
  'ban',
  'unban',
  'verify-email',
  'backup',
  'restore',
  'upgrade',
  'migrate-db',
  'check',
  'migrate-storage',
  'import',
  'block',
  'import-blocklist',
  'rehash',
  'sign-variant',
  'seed',
  'help',
]

test('the command list names every command', async () => {
  const { run } = sandbox('list')
  const listed = await run('help')
  expect(listed.code).toBe(0)
  expect(listed.out).toStartWith('Usage: bun run cli [options] [command]')
  const names = listed.out
    .split('Commands:')[1]!
    .trim()
    .split('\n')
    .map((line) => line.trim().split(' ')[0])
  expect(names).toEqual(COMMANDS)
  // No argument at all prints the same list.
  expect((await run()).out.trim()).toBe(listed.out.trim())
})

test('--help of every command prints its usage and creates nothing', async () => {
  const { cwd, dataDir, run } = sandbox('help')
  for (const command of COMMANDS) {
    for (const flag of command === 'backup' || command === 'ban' ? ['--help', '-h'] : ['--help']) {
      const result = await run(command, flag, 'target')
      expect(`${command} ${flag}: ${result.code} ${result.err}`).toBe(`${command} ${flag}: 0 `)
      expect(result.out).toStartWith(`Usage: bun run cli ${command === 'help' ? '' : command}`)
    }
  }
  // `backup --help` made ./--help/ holding the database and the secrets before; now nothing is made at all.
  expect(readdirSync(cwd)).toEqual([])
  expect(existsSync(dataDir)).toBe(false)
})

test('unknown options and commands, missing and extra arguments, bad values: exit 2 and one line', async () => {
  const { cwd, run } = sandbox('usage')
  const cases: [string[], string][] = [
    [['import', '--nope', 'dir', '--user', 'a'], "error: unknown option '--nope'"],
    [['backup'], "error: missing required argument 'target'"],
    [['ban'], "error: missing required argument 'username'"],
    [['ban', 'a', 'b'], 'error: too many arguments'],
    [['import', 'dir'], "error: required option '--user <username>' not specified"],
    [['set-role', 'root', 'king'], "error: command-argument value 'king' is invalid for argument 'role'"],
    [['seed', 'many'], "error: command-argument value 'many' is invalid for argument 'rows'"],
    [['restor', 'x.tar'], "error: unknown command 'restor'"],
  ]
  for (const [args, message] of cases) {
    const result = await run(...args)
    expect(`${args.join(' ')}: ${result.code}`).toBe(`${args.join(' ')}: 2`)
    expect(result.out).toBe('')
    expect(result.err).toStartWith(message)
    expect(result.err.trim().split('\n')).toHaveLength(1)
  }
  // The suggestion stays, on the same line.
  expect((await run('restor', 'x.tar')).err).toBe("error: unknown command 'restor' (Did you mean restore?)\n")
  expect(readdirSync(cwd)).toEqual([])
})

test('a failure prints one line without a stack; --debug adds the stack', async () => {
  const { cwd, run } = sandbox('errors')
  const missing = await run('restore', 'nope.tar')
  expect(missing.code).toBe(1)
  expect(missing.err).toBe('error: No such backup: nope.tar\n')

  mkdirSync(join(cwd, 'full'))
  writeFileSync(join(cwd, 'full', 'keep'), 'x')
  const full = await run('backup', 'full')
  expect(full.code).toBe(1)
  expect(full.err).toBe('error: Backup directory full is not empty\n')

  const debug = await run('--debug', 'restore', 'nope.tar')
  expect(debug.code).toBe(1)
  expect(debug.err).toStartWith('Error: No such backup: nope.tar\n')
  expect(debug.err).toMatch(/\n\s+at .*backup\.ts:\d+/)
})

test('--version and version print the version and read no configuration', async () => {
  const { version } = (await Bun.file(join(import.meta.dir, '../../package.json')).json()) as { version: string }
  const { run } = sandbox('version')
  for (const args of [['--version'], ['-V'], ['version']]) {
    // An invalid environment breaks every command that reads it, not these.
    const result = await cliAt(join(scratch, 'version', 'data'), args, { env: { PORT: 'not-a-port' } })
    expect(`${args}: ${result.code} ${result.out}`).toBe(`${args}: 0 ${version}\n`)
  }
  expect((await run('version')).code).toBe(0)
})
