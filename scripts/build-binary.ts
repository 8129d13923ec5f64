/**
 * Builds the single executable: `bun run build:binary [outfile]` (default dist/imghost).
 *
 * Embedded: all code and npm packages (bundled), the NSFW, checkpoint and list-read workers (more entry points), the
 * nsfwjs model (imported as modules by nsfwjs), the tfjs .wasm files and the Swagger UI files (`type: 'file'` imports),
 * src/web/assets, src/db/migrations and src/db/migrations-pg (directories, read from `import.meta.dir` as in the
 * sources), sharp's native addon and libvips.
 *
 * Native code is that of the machine that builds: build on the platform you deploy to (linux-x64 or linux-arm64, glibc).
 */

import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { BunPlugin } from 'bun'

const root = resolve(import.meta.dir, '..')
const src = join(root, 'src')

/**
 * sharp loads its addon through `createRequire(import.meta.url)`, which the bundler cannot see, so the addon would
 * not be embedded. Dropping that line leaves the bundler's own `require`, which embeds the `.node` file it names.
 * The embedded addon is loaded from a temporary copy, where its rpath cannot find libvips: sharp is also made to
 * embed libvips and preload it first (src/media/libvips-preload.ts).
 */
function sharpPlugin(): BunPlugin {
  const platform = `${process.platform}-${process.arch}`
  const libvips = `@img/sharp-libvips-${platform}/binary`
  try {
    Bun.resolveSync(libvips, join(root, 'node_modules/sharp'))
  } catch {
    throw new Error(
      `No prebuilt libvips for ${platform} (${libvips}): the binary can only be built where sharp's prebuilt binaries are installed`,
    )
  }
  const createRequireLine = 'const require = createRequire(import.meta.url);'
  return {
    name: 'imghost-sharp',
    setup(build) {
      build.onLoad({ filter: /[\\/]node_modules[\\/]sharp[\\/]dist[\\/](sharp|utility)\.mjs$/ }, async ({ path }) => {
        const source = await Bun.file(path).text()
        if (!source.includes(createRequireLine)) {
          throw new Error(
            `${path} no longer contains "${createRequireLine}": check how this sharp version loads its addon`,
          )
        }
        if (path.endsWith('utility.mjs')) return { loader: 'js', contents: source.replace(createRequireLine, '') }
        const preload = [
          `import __libvipsPath from ${JSON.stringify(libvips)} with { type: "file" };`,
          `import { preloadLibvips as __preloadLibvips } from ${JSON.stringify(join(src, 'media/libvips-preload.ts'))};`,
          '__preloadLibvips(__libvipsPath);',
        ].join('\n')
        return { loader: 'js', contents: `${preload}\n${source.replace(createRequireLine, '')}` }
      })
    },
  }
}

export async function buildBinary(outfile = join(root, 'dist/imghost')) {
  const result = await Bun.build({
    entrypoints: [
      join(src, 'binary.ts'),
      join(src, 'moderation/worker.ts'),
      join(src, 'db/checkpoint-worker.ts'),
      join(src, 'modules/images/read-worker.ts'),
      join(src, 'storage/walk-worker.ts'),
    ],
    // Every chunk at the root of the embedded file system, so `new URL('./worker.ts', import.meta.url)` in the
    // bundled classifier (and './checkpoint-worker.ts' in the checkpointer, './read-worker.ts' in the list reads,
    // './walk-worker.ts' in the local store's walk) names the worker's chunk, as it names the worker's source when run
    // from the sources.
    naming: { entry: '[name].[ext]' },
    compile: {
      outfile,
      // Read at run time from `join(import.meta.dir, '<dir>')`; a directory is embedded under its own name at the
      // root, which is import.meta.dir of the bundled code.
      assets: [join(src, 'web/assets'), join(src, 'db/migrations'), join(src, 'db/migrations-pg')],
      // Like `bun src/index.ts`: a .env file in the working directory is read; bunfig.toml only configures tests.
      autoloadBunfig: false,
    },
    target: 'bun',
    // Bun 1.4 reads a package's `sideEffects` array as `false` (oven-sh/bun#40650) and shakes away what it names:
    // tfjs-core would lose the modules that register its platform and flags. Keep every module, like the runtime.
    ignoreDCEAnnotations: true,
    // Not minified: Elysia reads the source of handlers and hooks (Function.toString) to decide what to parse, and
    // minified code hides what they use (an API-key route would get no headers). No source map then: stack traces
    // point at readable code, and the map would add megabytes (the model weights are modules).
    plugins: [sharpPlugin()],
  })
  if (!result.success) throw new AggregateError(result.logs, 'build failed')
  for (const log of result.logs) console.warn(log)
  if (!existsSync(outfile)) throw new Error(`build reported success but ${outfile} is missing`)
  return outfile
}

if (import.meta.main) {
  const started = performance.now()
  const outfile = await buildBinary(process.argv[2] ? resolve(process.argv[2]) : undefined)
  console.log(
    `built ${outfile} (${(Bun.file(outfile).size / 1e6).toFixed(1)} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  )
}
