/**
 * What the server process loads (src/server.ts): the heavy packages only where they run, so an idle server holds none
 * of them (docs/api.md: "The server process loads only what it runs"; bench/README.md "Idle RSS" has what each costs).
 */
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { makeImage } from './fixtures'

const root = join(import.meta.dir, '..')

/**
 * Starts a real server (SQLite, the default install) in a process of its own, uploads a picture through its media
 * workers, and lists the modules that process loaded.
 */
async function modulesOfAServer(): Promise<string[]> {
  const png = await makeImage('png', 40, 30, 1)
  const script = `
    const { mkdtempSync, rmSync } = require('node:fs')
    const { tmpdir } = require('node:os')
    const { join } = require('node:path')
    const { loadConfig } = await import(${JSON.stringify(join(root, 'src/config.ts'))})
    const { startServer } = await import(${JSON.stringify(join(root, 'src/server.ts'))})
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-modules-'))
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_REQUESTS: 'false', JWT_SECRET: 'm'.repeat(48) })
    const none = { classify: async () => ({ Porn: 0, Hentai: 0, Sexy: 0, Neutral: 1, Drawing: 0 }), warm: async () => {}, close: async () => {}, queueDepth: 0 }
    const server = await startServer(config, { classifier: none })
    const png = Buffer.from(${JSON.stringify(Buffer.from(png).toString('base64'))}, 'base64')
    const form = new FormData()
    form.append('file', new Blob([png], { type: 'image/png' }), 'a.png')
    const res = await fetch('http://127.0.0.1:' + server.port + '/api/upload', { method: 'POST', body: form })
    if (res.status !== 201) throw new Error('upload: ' + res.status + ' ' + (await res.text()))
    const loaded = Object.keys(require.cache)
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
    console.log(JSON.stringify(loaded))
  `
  // The default install: SQLite, whatever engine this test run uses.
  const run = Bun.spawn([process.execPath, '-e', script], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '' },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const [out, code] = await Promise.all([new Response(run.stdout).text(), run.exited])
  expect(code).toBe(0)
  return JSON.parse(out.trim().split('\n').pop()!) as string[]
}

describe('the server process', () => {
  test('loads no decoder, no mail, QR code or passkey library and no PostgreSQL driver until they are used', async () => {
    const loaded = await modulesOfAServer()
    const has = (part: string) => loaded.some((path) => path.includes(part))
    // The check can fail: what it looks for is how these paths are written.
    expect(has('/node_modules/elysia/')).toBe(true)
    expect(has('/src/db/schema-sqlite.ts')).toBe(true)
    for (const part of [
      '/node_modules/sharp/', // decoding runs in the media worker processes
      '/node_modules/heic-decode/',
      '/node_modules/nodemailer/', // the first email
      '/node_modules/qrcode/', // the first TOTP setup
      '/node_modules/@simplewebauthn/', // the first passkey ceremony
      '/node_modules/@tensorflow/', // the classifier's Worker
      '/node_modules/drizzle-orm/bun-sql/', // PostgreSQL only
      '/src/db/schema-pg.ts',
      '/src/media/processor.ts',
    ])
      expect({ part, loaded: has(part) }).toEqual({ part, loaded: false })
  }, 60_000)
})

describe("the list reads' Worker", () => {
  test('loads the tables and drizzle, not Elysia, TypeBox or the file-type sniffer (each Worker loads its own copy)', async () => {
    const script = `
      await import(${JSON.stringify(join(root, 'src/modules/images/read-worker.ts'))})
      console.log(JSON.stringify(Object.keys(require.cache)))
      process.exit(0)
    `
    const run = Bun.spawn([process.execPath, '-e', script], { cwd: root, stdout: 'pipe', stderr: 'inherit' })
    const [out, code] = await Promise.all([new Response(run.stdout).text(), run.exited])
    expect(code).toBe(0)
    const loaded = JSON.parse(out.trim().split('\n').pop()!) as string[]
    const has = (part: string) => loaded.some((path) => path.includes(part))
    expect(has('/node_modules/drizzle-orm/')).toBe(true)
    expect(has('/src/modules/images/list-reads.ts')).toBe(true)
    for (const part of ['/node_modules/elysia/', '/node_modules/@sinclair/', '/node_modules/file-type/'])
      expect({ part, loaded: has(part) }).toEqual({ part, loaded: false })
  }, 60_000)
})
