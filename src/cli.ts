/** `bun run cli <command>`: the operator commands (src/cli/main.ts); the single binary runs them as `imghost`. */
import { runCli } from './cli/main'

await runCli(process.argv.slice(2), 'bun run cli')
