/**
 * The operator commands (`bun run cli <command>`, or `imghost <command>` from the single binary), on commander: every
 * command has `--help`, and usage errors (an unknown command or option, a missing argument) exit 2 with one line.
 */
import { Command, CommanderError } from 'commander'
import { VERSION } from '../version'
import { accountCommands } from './accounts'
import { CliError } from './context'
import { dataCommands } from './data'
import { imageCommands } from './images'

/** A command that ran but left something to fix (check, import, ...) exits 2 too; see docs/operations.md. */
const USAGE_ERROR = 2

function program(name: string): Command {
  const cli = new Command(name)
    .description(
      'Operator commands of imghost. Reads the same environment as the server (DATA_DIR, STORAGE, S3_*, DATABASE_URL).',
    )
    .version(VERSION, '-V, --version', 'print the version')
    .option('--debug', 'print the stack trace of an error')
    .helpCommand('help [command]', 'print the usage of a command')
    .showSuggestionAfterError(true)
    // A usage error on one line, its suggestion ("Did you mean restore?") joined to it: a script logs one line.
    .configureOutput({ outputError: (text, write) => write(`${text.trim().split('\n').join(' ')}\n`) })
    .exitOverride()
  cli
    .command('version')
    .description('print the version')
    .action(() => console.log(VERSION))
  accountCommands(cli)
  dataCommands(cli)
  imageCommands(cli)
  // Commander's own exit replaced by ours in every subcommand too (configureOutput is inherited, this is not).
  for (const command of cli.commands) command.exitOverride()
  return cli
}

/** One line for an error; the stack only with `--debug` (an operator reads the message, a developer the trace). */
function report(error: unknown, debug: boolean) {
  if (debug && error instanceof Error && error.stack) console.error(error.stack)
  else console.error(`error: ${(error instanceof Error ? error.message : String(error)).split('\n').join(' ')}`)
}

/** Runs the CLI on `argv` (without the runtime and script), naming itself `name` in its usage. */
export async function runCli(argv: string[], name: string) {
  const debug = argv.includes('--debug')
  const cli = program(name)
  // No arguments: the list of commands, as `help` prints it.
  if (argv.length === 0) return void console.log(cli.helpInformation().trimEnd())
  try {
    await cli.parseAsync(argv, { from: 'user' })
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are commander's "errors" that exit 0; its message was printed already, on one line.
      process.exitCode = error.exitCode === 0 ? 0 : USAGE_ERROR
      return
    }
    report(error, debug)
    process.exitCode = error instanceof CliError ? error.exitCode : 1
  }
}
