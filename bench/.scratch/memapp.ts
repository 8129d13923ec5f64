import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
const rss = () => Math.round(process.memoryUsage().rss / 1048576)
console.log('bare', rss())
const { loadConfig } = await import('../../src/config')
const { startServer } = await import('../../src/server')
console.log('imported', rss())
const dataDir = mkdtempSync(join(tmpdir(), 'memapp-'))
const fake = { classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }), warm: async () => {}, close: async () => {}, queueDepth: 0 }
const s = await startServer(loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_REQUESTS: 'false' }), { classifier: fake as any })
console.log('started', rss())
await new Promise((r) => setTimeout(r, 1500)); Bun.gc(true)
console.log('settled', rss(), JSON.stringify(process.memoryUsage()))
const { heapStats } = await import('bun:jsc')
const h = heapStats()
console.log('heap', Math.round(h.heapSize / 1048576), 'MB, objects', h.objectCount)
await s.stop()
process.exit(0)
