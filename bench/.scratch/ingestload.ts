import { adminCredentials, upload } from '../lib/app'
const [url, file, concArg, nArg] = process.argv.slice(2)
const { apiKey } = await adminCredentials(url)
const f = { blob: new Blob([await Bun.file(file).arrayBuffer()]), name: 'a.png' }
let next = 0; const n = Number(nArg)
const t = performance.now()
await Promise.all(Array.from({ length: Number(concArg) }, async () => { while (next++ < n) await upload(url, '/api/v1/upload', { 'x-api-key': apiKey }, [f]) }))
console.log((n / (performance.now() - t) * 1000).toFixed(1), '/s')
