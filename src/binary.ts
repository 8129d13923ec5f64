/**
 * Entry point of the single executable (`bun run build:binary`, see scripts/build-binary.ts).
 *
 *   imghost                    runs the server, configured by the environment like `bun src/index.ts`
 *   imghost <command> [args]   runs an operator command, like `bun run cli <command>` (`imghost help` lists them)
 */
export {}

if (process.argv.length > 2) await import('./cli')
else await import('./index')
