import { connect } from 'node:net'
export interface RawResponse { status: number; headers: Record<string, string>; body: string; ms: number }
function dechunk(buf: Buffer): Buffer {
  const out: Buffer[] = []; let i = 0
  while (i < buf.length) {
    const eol = buf.indexOf('\r\n', i); if (eol < 0) break
    const size = parseInt(buf.subarray(i, eol).toString(), 16); if (!size) break
    out.push(buf.subarray(eol + 2, eol + 2 + size)); i = eol + 2 + size + 2
  }
  return Buffer.concat(out)
}
export function rawRequest(port: number, head: string, body?: AsyncIterable<Uint8Array> | Uint8Array | string, timeoutMs = 10000): Promise<RawResponse> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let done = false
    const finish = () => {
      if (done) return; done = true
      const all = Buffer.concat(chunks); const sep = all.indexOf('\r\n\r\n')
      if (sep < 0) return reject(new Error('no response: ' + all.toString().slice(0, 100)))
      const lines = all.subarray(0, sep).toString().split('\r\n')
      const status = Number(lines[0].split(' ')[1])
      const headers: Record<string, string> = {}
      for (const l of lines.slice(1)) { const c = l.indexOf(':'); headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim() }
      let rest = all.subarray(sep + 4)
      if (headers['transfer-encoding'] === 'chunked') rest = dechunk(rest)
      else if (headers['content-length']) rest = rest.subarray(0, Number(headers['content-length']))
      sock.destroy()
      resolve({ status, headers, body: rest.toString(), ms: performance.now() - started })
    }
    const timer = setTimeout(() => { sock.destroy(); if (!done) { done = true; reject(new Error('timeout')) } }, timeoutMs)
    sock.on('data', (d) => {
      chunks.push(d)
      // Response complete?
      const all = Buffer.concat(chunks); const sep = all.indexOf('\r\n\r\n')
      if (sep >= 0) {
        const h = all.subarray(0, sep).toString().toLowerCase()
        const cl = /content-length:\s*(\d+)/.exec(h)
        if (cl && all.length - sep - 4 >= Number(cl[1])) { clearTimeout(timer); finish() }
        else if (h.includes('transfer-encoding: chunked') && all.subarray(sep).includes('\r\n0\r\n\r\n')) { clearTimeout(timer); finish() }
      }
    })
    sock.on('close', () => { clearTimeout(timer); finish() })
    sock.on('error', (e) => { if (chunks.length) finish(); else if (!done) { done = true; reject(e) } })
    sock.on('connect', async () => {
      sock.write(head)
      if (body === undefined) return
      if (typeof body === 'string' || body instanceof Uint8Array) { sock.write(body); return }
      try { for await (const c of body) { if (done || sock.destroyed) break; sock.write(c) } } catch {}
    })
  })
}
