/**
 * Entry point of the single executable (`bun run build:binary`, see scripts/build-binary.ts).
 *
 *   imghost                    runs the server, configured by the environment like `bun src/index.ts`
 *   imghost <command> [args]   runs an operator command, like `bun run cli <command>` (`imghost help` lists them;
 *                              `imghost --version` prints the version)
 *
 * The server's media worker processes are this same executable, started with IMGHOST_WORKER=media
 * (src/workers/media-pool.ts).
 */
// Before anything else: @simplewebauthn/server's certificate code (@peculiar/x509, tsyringe) needs the Reflect
// metadata polyfill when its module runs, and in the bundle that module runs before the package's own import of it.
import 'reflect-metadata'

if (process.env.IMGHOST_WORKER === 'media') await import('./workers/media-worker')
else if (process.argv.length > 2) await (await import('./cli/main')).runCli(process.argv.slice(2), 'imghost')
else await import('./index')
