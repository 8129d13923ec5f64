/**
 * Where the service's idle memory goes (the idle-RSS target in bench/README.md): the RSS of a bare Bun process, of
 * the service without the classifier, and of the service with the classifier's model loaded and warm, each in a
 * process of its own on an empty data directory, read once the process is idle.
 *
 * Usage: bun bench/memory.ts
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { Classifier } from '../src/moderation'

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
    const server = await startServer(config, args.child === 'service' ? { classifier: none } : {})
    await server.deps.classifier.warm()
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
  console.log('idle RSS, each in its own process, after a full GC:')
  console.log(`  bare Bun process                         ${bare} MB`)
  console.log(
    `  service without the classifier           ${service} MB  (+${service - bare} MB: the code, sharp/libvips, SQLite, the app)`,
  )
  console.log(
    `  service with the model loaded and warm   ${withModel} MB  (+${withModel - service} MB: the classifier's Worker, tfjs, the wasm heap)`,
  )
  console.log(`  target                                   175 MB`)
}
