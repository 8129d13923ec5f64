/**
 * Where the service's idle memory goes (the idle-RSS targets in bench/README.md): the RSS of a bare Bun process, of
 * the service without the classifier, of the service with the classifier's model loaded and warm, and of the service
 * once its model has been loaded and then unloaded for being idle (NSFW_IDLE_UNLOAD_SECONDS), each in a process of its
 * own on an empty data directory, read once the process is idle.
 *
 * Usage: bun bench/memory.ts
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { type Classifier, createNsfwClassifier } from '../src/moderation'
import { IMAGE_BYTES } from '../src/moderation/protocol'

const { values: args } = parseArgs({ options: { child: { type: 'string' } } })
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024)

/** Settles, collects garbage, and reports the RSS in MB. */
async function idleRss() {
  await Bun.sleep(1000)
  Bun.gc(true)
  await Bun.sleep(500)
  return mb(process.memoryUsage().rss)
}

if (args.child) {
  let rss: number
  if (args.child === 'bare') rss = await idleRss()
  else {
    // Imported here, so the bare process loads none of it.
    const { loadConfig } = await import('../src/config')
    const { startServer } = await import('../src/server')
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-memory-'))
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_REQUESTS: 'false', JWT_SECRET: 'm'.repeat(48) })
    const none: Classifier = {
      classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }),
      warm: async () => {},
      close: async () => {},
      queueDepth: 0,
    }
    let unloaded: Promise<void> | undefined
    const classifier =
      args.child === 'service'
        ? none
        : args.child === 'unloaded'
          ? createNsfwClassifier({
              ...config.nsfw,
              idleUnloadMs: 1,
              onModel: (e) => {
                if (e.type === 'unloaded') unloaded = Promise.resolve()
              },
            })
          : undefined
    const server = await startServer(config, classifier ? { classifier } : {})
    await server.deps.classifier.classify(new Uint8Array(IMAGE_BYTES))
    if (args.child === 'unloaded') while (!unloaded) await Bun.sleep(10)
    rss = await idleRss()
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  console.log(JSON.stringify({ rss }))
} else {
  const measure = (child: string) => {
    const run = Bun.spawnSync([process.execPath, import.meta.path, `--child=${child}`], {
      stdout: 'pipe',
      stderr: 'ignore',
    })
    const last = run.stdout.toString().trim().split('\n').pop() ?? ''
    return (JSON.parse(last) as { rss: number }).rss
  }
  const bare = measure('bare')
  const service = measure('service')
  const withModel = measure('model')
  const unloaded = measure('unloaded')
  console.log('idle RSS, each in its own process, after a full GC:')
  console.log(`  bare Bun process                         ${bare} MB`)
  console.log(
    `  service without the classifier           ${service} MB  (+${service - bare} MB: the code, sharp/libvips, SQLite, the app)`,
  )
  console.log(
    `  service with the model loaded and warm   ${withModel} MB  (+${withModel - service} MB: the classifier's Worker, tfjs, the wasm heap)`,
  )
  console.log(
    `  service after the model was unloaded     ${unloaded} MB  (+${unloaded - service} MB over never loading it; target 110 MB)`,
  )
  console.log(`  target with the model loaded             175 MB`)
}
