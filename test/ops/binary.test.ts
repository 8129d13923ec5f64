import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { makeImage, uploadForm } from '../fixtures'
import { heifEnc } from '../media/heic-files'
import { gradient } from '../media/helpers'

// The single executable, run the way an operator would: copied alone into an empty directory (no node_modules
// anywhere above it), configured by the environment. Set IMGHOST_BINARY to test an already built binary (CI: after
// `bun run build:binary`, IMGHOST_BINARY=dist/imghost); otherwise it is built here first (a few seconds).

const root = join(import.meta.dir, '..', '..')
const scratch = mkdtempSync(join(tmpdir(), 'imghost-binary-'))
const runDir = join(scratch, 'run')
const dataDir = join(runDir, 'data')
const binary = join(runDir, 'imghost')

function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/** Only what a service manager would set: no NODE_PATH, no BUN_* settings, nothing pointing back at the repo. */
function environment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: dataDir, ...extra }
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR
  return env
}

/** Everything a process wrote, for failure messages. */
function collect(stream: ReadableStream<Uint8Array>) {
  const chunks: string[] = []
  const done = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) chunks.push(decoder.decode(chunk, { stream: true }))
  })()
  return { text: () => chunks.join(''), done }
}

let server: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
let stdout: ReturnType<typeof collect>
let stderr: ReturnType<typeof collect>
let url: string
let startMs: number
const logs = () => `--- stdout\n${stdout?.text()}\n--- stderr\n${stderr?.text()}`

async function waitForHealth(timeoutMs: number) {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    if (server.exitCode !== null) throw new Error(`the binary exited with ${server.exitCode}\n${logs()}`)
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) return
    await Bun.sleep(25)
  }
  throw new Error(`no /healthz within ${timeoutMs} ms\n${logs()}`)
}

beforeAll(async () => {
  mkdirSync(runDir)
  let built = process.env.IMGHOST_BINARY
  if (!built) {
    built = join(scratch, 'build', 'imghost')
    const build = Bun.spawnSync([process.execPath, join(root, 'scripts/build-binary.ts'), built], { cwd: root })
    if (build.exitCode !== 0) throw new Error(`build failed:\n${build.stdout}\n${build.stderr}`)
  }
  copyFileSync(built, binary)
  Bun.spawnSync(['chmod', '+x', binary])

  const port = freePort()
  url = `http://localhost:${port}`
  const started = performance.now()
  server = Bun.spawn([binary], {
    cwd: runDir,
    env: environment({ PORT: String(port), LOG_REQUESTS: 'false', NSFW_SCAN_TIMEOUT_MS: '60000' }),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  stdout = collect(server.stdout)
  stderr = collect(server.stderr)
  await waitForHealth(30_000)
  startMs = performance.now() - started
  console.log(
    `binary: ${(Bun.file(binary).size / 1e6).toFixed(1)} MB, /healthz answered ${startMs.toFixed(0)} ms after start`,
  )
}, 120_000)

afterAll(() => {
  if (server && server.exitCode === null) server.kill('SIGKILL')
  rmSync(scratch, { recursive: true, force: true })
})

describe('single binary', () => {
  test('runs alone: nothing next to it, no node_modules above it', () => {
    expect(readdirSync(runDir).sort()).toEqual(['data', 'imghost'])
    for (let dir = runDir; dir !== dirname(dir); dir = dirname(dir))
      expect(existsSync(join(dir, 'node_modules'))).toBe(false)
  })

  let imageId: string
  let heicImageId: string
  let session: string
  test('register, API key, upload through the API (a PNG, a HEIC), direct link returns the same bytes (sharp, libheif-js, migrations)', async () => {
    const register = await fetch(`${url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'binaryuser', email: 'binary@example.com', password: 'correct horse battery' }),
    })
    expect(register.status).toBe(201)
    const { token } = (await register.json()) as { token: string }
    session = token

    const key = await fetch(`${url}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: 'binary' }),
    })
    expect(key.status).toBe(201)
    const { apiKey } = (await key.json()) as { apiKey: string }

    const png = await makeImage('png', 40, 30)
    const upload = await fetch(`${url}/api/v1/upload`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      body: uploadForm([{ bytes: png, name: 'one.png' }]),
    })
    const image = (await upload.json()) as { id: string; url: string; thumbnail: string; width: number; height: number }
    expect(upload.status, `${JSON.stringify(image)}\n${logs()}`).toBe(201)
    expect(image).toMatchObject({ width: 40, height: 30 })
    imageId = image.id

    const direct = await fetch(image.url)
    expect(direct.status).toBe(200)
    expect(new Uint8Array(await direct.arrayBuffer())).toEqual(png)
    const thumbnail = await fetch(image.thumbnail)
    expect(thumbnail.status).toBe(200)
    expect(thumbnail.headers.get('content-type')).toBe('image/webp')

    // HEIC: decoded by libheif-js (wasm, bundled) in the media worker, which is the binary itself.
    const heic = await heifEnc(gradient(64, 48))
    const heicUpload = await fetch(`${url}/api/v1/upload`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      body: uploadForm([{ bytes: heic, name: 'phone.heic' }]),
    })
    const heicImage = (await heicUpload.json()) as { id: string; thumbnail: string; mime: string; width: number }
    expect(heicUpload.status, `${JSON.stringify(heicImage)}\n${logs()}`).toBe(201)
    expect(heicImage).toMatchObject({ mime: 'image/heic', width: 64 })
    expect((await fetch(heicImage.thumbnail)).headers.get('content-type')).toBe('image/webp')
    heicImageId = heicImage.id
  })

  test('libraries loaded on their first use are in it: a TOTP setup (qrcode), passkey options (SimpleWebAuthn)', async () => {
    const call = (path: string) =>
      fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${session}` } })
    const totp = await call('/api/auth/totp/setup')
    const setup = (await totp.json()) as { qrCode: string }
    expect(totp.status, `${JSON.stringify(setup)}\n${logs()}`).toBe(200)
    expect(setup.qrCode).toStartWith('data:image/svg+xml;base64,')
    for (const path of ['/api/auth/passkeys/register/options', '/api/auth/passkeys/login/options']) {
      const res = await call(path)
      const body = (await res.json()) as { options: { challenge: string } }
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      expect(body.options.challenge.length).toBeGreaterThan(16)
    }
  })

  test('embedded files: Swagger UI and the site assets are served byte for byte', async () => {
    const swaggerCss = await fetch(`${url}/swagger/assets/swagger-ui.css`)
    expect(swaggerCss.status).toBe(200)
    expect(await swaggerCss.text()).toBe(
      await Bun.file(join(root, 'node_modules/swagger-ui-dist/swagger-ui.css')).text(),
    )
    const swaggerJs = await fetch(`${url}/swagger/assets/swagger-ui-bundle.js`)
    expect(swaggerJs.status).toBe(200)
    expect(swaggerJs.headers.get('content-type')).toContain('javascript')
    expect((await swaggerJs.arrayBuffer()).byteLength).toBe(
      Bun.file(join(root, 'node_modules/swagger-ui-dist/swagger-ui-bundle.js')).size,
    )

    const siteCss = await fetch(`${url}/assets/site.css`)
    expect(siteCss.status).toBe(200)
    expect(await siteCss.text()).toBe(await Bun.file(join(root, 'src/web/assets/site.css')).text())
  })

  let webImageId: string
  test('an anonymous web upload is scanned by the NSFW model (worker, tfjs wasm, model weights)', async () => {
    const upload = await fetch(`${url}/api/upload`, {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('jpeg', 96, 80, 3), name: 'web.jpg' }]),
    })
    const image = (await upload.json()) as { id: string; nsfw: boolean }
    expect(upload.status).toBe(201)
    expect(image.nsfw).toBe(false)
    webImageId = image.id
    expect(stderr.text()).not.toContain('nsfw scan failed')
  }, 90_000)

  test('SIGTERM: clean exit 0; the scan was recorded as done', async () => {
    server.kill('SIGTERM')
    const code = await Promise.race([server.exited, Bun.sleep(15_000).then(() => 'timeout')])
    expect(code, logs()).toBe(0)
    await Promise.all([stdout.done, stderr.done])
    expect(stdout.text()).toContain('"msg":"shutting down"')
    // Both workers were found inside the binary: the NSFW one scanned (below), the checkpoint one never failed.
    expect(stderr.text()).not.toContain('checkpoint worker failed')

    const db = new Database(join(dataDir, 'imghost.sqlite'), { readonly: true })
    const rows = db.query('SELECT id, scan_status AS scanStatus FROM images ORDER BY id').all()
    db.close()
    expect(rows).toEqual(
      [
        { id: imageId, scanStatus: 'none' },
        { id: heicImageId, scanStatus: 'none' },
        { id: webImageId, scanStatus: 'done' },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    )
  }, 30_000)

  test("`imghost --version` prints package.json's version", () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    const run = Bun.spawnSync([binary, '--version'], { cwd: runDir, env: environment() })
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0)
    expect(run.stdout.toString()).toBe(`${version}\n`)
  })

  test('the binary names itself `imghost` in every usage it prints', () => {
    for (const args of [['help'], ['backup', '--help']]) {
      const run = Bun.spawnSync([binary, ...args], { cwd: runDir, env: environment() })
      expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0)
      expect(run.stdout.toString()).toStartWith(
        `Usage: imghost ${args[0] === 'help' ? '[options] [command]' : 'backup'}`,
      )
    }
  })

  test('operator commands run from the same binary (`imghost check`)', () => {
    const check = Bun.spawnSync([binary, 'check'], { cwd: runDir, env: environment() })
    expect(check.exitCode, `${check.stdout}\n${check.stderr}`).toBe(0)
    expect(JSON.parse(check.stdout.toString())).toMatchObject({
      images: 3,
      missingOriginals: [],
      missingThumbnails: [],
      strayFiles: [],
    })
  })
})
