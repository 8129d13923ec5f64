import { compare } from '../lib/load'
const targets = process.argv.slice(2).map((s) => { const [label, url] = s.split('='); return { label, url } })
const r = await compare('wrk', targets, { connections: 32, seconds: 2, rounds: 3, warmup: 1 })
for (const x of r) console.log(x.label.padEnd(12), Math.round(x.rps), x.runs.join('/'), 'p99', x.p99Ms)
