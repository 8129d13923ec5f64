// Reference: a bare Bun.serve answering each request with `new Response(Bun.file(path))`.
// Usage: bun bench/ref/bun-file.ts <port> <dir>; serves the files directly inside <dir> as /<name>.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const [port, dir] = process.argv.slice(2)
const files = new Map(readdirSync(dir).map((name) => [`/${name}`, join(dir, name)]))

Bun.serve({
  hostname: '127.0.0.1',
  port: Number(port),
  fetch(request) {
    const url = request.url
    const path = files.get(url.slice(url.indexOf('/', 8)))
    return path ? new Response(Bun.file(path)) : new Response('Not found', { status: 404 })
  },
})
console.log(JSON.stringify({ listening: Number(port) }))
