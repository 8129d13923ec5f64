import { join } from 'node:path'
import { readFileSync, readdirSync } from 'node:fs'
import { adminCredentials, startApp, upload } from '../lib/app'
import { tempDir } from '../lib/proc'
const file = process.argv[2], conc = Number(process.argv[3] ?? 4)
const dir = tempDir('ingestcpu-')
const app = await startApp({ dataDir: join(dir, 'data'), log: join(dir, 'app.log') })
const { apiKey } = await adminCredentials(app.url)
const blob = new Blob([await Bun.file(file).arrayBuffer()])
const f = { blob, name: file.endsWith('png') ? 'a.png' : 'a.jpg' }
for (let i = 0; i < 4; i++) await upload(app.url, '/api/v1/upload', { 'x-api-key': apiKey }, [f])
const ticks = (path: string) => { const p = readFileSync(path, 'utf8').split(') ')[1].split(' '); return (Number(p[11]) + Number(p[12])) * 10 }
const threads = () => Object.fromEntries(readdirSync(`/proc/${app.pid}/task`).map((t) => [t, { name: readFileSync(`/proc/${app.pid}/task/${t}/comm`, 'utf8').trim(), ms: ticks(`/proc/${app.pid}/task/${t}/stat`) }]))
const before = threads(), pb = ticks(`/proc/${app.pid}/stat`), cb = process.cpuUsage()
const n = 60; let next = 0
const t = performance.now()
await Promise.all(Array.from({ length: conc }, async () => { while (next++ < n) await upload(app.url, '/api/v1/upload', { 'x-api-key': apiKey }, [f]) }))
const wall = performance.now() - t
const after = threads(), pa = ticks(`/proc/${app.pid}/stat`), ca = process.cpuUsage(cb)
console.log(`${n} uploads c=${conc} in ${wall.toFixed(0)} ms = ${(n / wall * 1000).toFixed(1)}/s; server CPU ${((pa - pb) / n).toFixed(1)} ms/upload; client CPU ${((ca.user + ca.system) / 1000 / n).toFixed(1)} ms/upload`)
const byName: Record<string, number> = {}
for (const [tid, a] of Object.entries(after)) { const d = a.ms - (before[tid]?.ms ?? 0); byName[a.name] = (byName[a.name] ?? 0) + d }
console.log(Object.entries(byName).filter(([, v]) => v > 0).map(([k, v]) => `${k}: ${(v / n).toFixed(1)}`).join(', '))
await app.stop()
