import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeImage } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

let t: TestServer
let work: string
beforeAll(async () => {
  t = await startTestServer()
  work = mkdtempSync(join(tmpdir(), 'imghost-clients-'))
})
afterAll(async () => {
  await t.stop()
  rmSync(work, { recursive: true, force: true })
})

/** Resolves ShareX's `{json:path}` syntax (dotted paths) against a JSON response. */
function resolveSharex(template: string, response: Record<string, unknown>): string {
  return template.replace(/\{json:([^}]+)\}/g, (_, path: string) => {
    const value = path
      .split('.')
      .reduce<unknown>(
        (v, key) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined),
        response,
      )
    if (value === undefined) throw new Error(`{json:${path}} does not resolve`)
    return String(value)
  })
}

/** Uploads exactly as ShareX would from a custom uploader: multipart with FileFormName, Arguments and Headers. */
async function sharexUpload(config: Record<string, any>, bytes: Uint8Array, name: string) {
  const form = new FormData()
  for (const [key, value] of Object.entries((config.Arguments ?? {}) as Record<string, string>)) form.append(key, value)
  form.append(config.FileFormName, new Blob([bytes as Uint8Array<ArrayBuffer>]), name)
  const res = await fetch(config.RequestURL, { method: config.RequestMethod, headers: config.Headers, body: form })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('GET /api/v1/clients/sharex', () => {
  test('a valid .sxcu for the calling key whose {json:...} paths resolve against a real upload', async () => {
    const user = await userWithKey(t)
    const res = await t.fetch('/api/v1/clients/sharex', { headers: user.keyHeader })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="[A-Za-z0-9._-]+\.sxcu"$/)
    const config = JSON.parse(await res.text())
    expect(config).toMatchObject({
      DestinationType: 'ImageUploader',
      RequestMethod: 'POST',
      RequestURL: `${t.url}/api/v1/upload`,
      Headers: { 'X-API-Key': user.apiKey },
      Body: 'MultipartFormData',
      FileFormName: 'file',
      URL: '{json:url}',
      ThumbnailURL: '{json:thumbnail}',
      DeletionURL: '{json:deletePage}',
      ErrorMessage: '{json:error}',
    })
    expect(config.Arguments).toBeUndefined()

    const png = await makeImage('png', 40, 30)
    const upload = await sharexUpload(config, png, 'shot.png')
    expect(upload.status).toBe(201)
    const direct = resolveSharex(config.URL, upload.body)
    const thumb = resolveSharex(config.ThumbnailURL, upload.body)
    const deletion = resolveSharex(config.DeletionURL, upload.body)
    expect(direct).toBe(`${t.url}/cdn/${upload.body.id}.png`)
    expect(deletion).toStartWith(`${t.url}/delete/${upload.body.id}/`)
    const original = await fetch(direct)
    expect(original.status).toBe(200)
    expect(new Uint8Array(await original.arrayBuffer())).toEqual(png)
    const thumbnail = await fetch(thumb)
    expect(thumbnail.status).toBe(200)
    expect(thumbnail.headers.get('content-type')).toBe('image/webp')

    // ErrorMessage resolves against an error answer.
    const refused = await sharexUpload(config, new TextEncoder().encode('not an image'), 'x.txt')
    expect(refused.status).toBe(400)
    expect(typeof refused.body.error).toBe('string')
    expect(resolveSharex(config.ErrorMessage, refused.body)).toBe(refused.body.error as string)

    // The deletion link opens (in a browser, no key) a page whose form deletes the image.
    const page = await fetch(deletion)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    const token = deletion.slice(deletion.lastIndexOf('/') + 1)
    const confirmed = await fetch(`${t.url}/delete/${upload.body.id}`, {
      method: 'POST',
      body: new URLSearchParams({ token }),
    })
    expect(confirmed.status).toBe(200)
    expect((await fetch(direct)).status).toBe(404)
  })

  test('the .sxcu is an image uploader only: ShareX sends it no text or other files, which the API refuses', async () => {
    const user = await userWithKey(t)
    const res = await t.fetch('/api/v1/clients/sharex', { headers: user.keyHeader })
    const config = JSON.parse(await res.text())
    // ShareX reads DestinationType as a comma-separated set of its destination kinds (ImageUploader, TextUploader,
    // FileUploader, URLShortener, URLSharingService): exactly one kind, the images'.
    const kinds = String(config.DestinationType)
      .split(',')
      .map((kind) => kind.trim())
    expect(kinds).toEqual(['ImageUploader'])
    // What a file uploader would have sent: a text file, refused by the API.
    const text = await sharexUpload(config, new TextEncoder().encode('notes'), 'notes.txt')
    expect(text.status).toBe(400)
  })

  test('visibility and album become multipart Arguments that the upload honours', async () => {
    const user = await userWithKey(t)
    const res = await t.json(`/api/v1/clients/sharex?visibility=private&album=${encodeURIComponent('Screen shots')}`, {
      headers: user.keyHeader,
    })
    expect(res.status).toBe(200)
    expect(res.body.Arguments).toEqual({ visibility: 'private', album: 'Screen shots' })
    const upload = await sharexUpload(res.body, await makeImage('png', 20, 20), 'a.png')
    expect(upload.status).toBe(201)
    expect(upload.body.visibility).toBe('private')
    const albums = await t.json('/api/albums', { headers: user.bearer })
    const album = albums.body.albums.find((a: { title: string }) => a.title === 'Screen shots')
    expect(album).toBeDefined()
    expect(album.imageCount).toBe(1)
  })

  test('no key: 401; a wrong key: 401; a bad visibility: 400', async () => {
    expect((await t.json('/api/v1/clients/sharex')).status).toBe(401)
    expect((await t.json('/api/v1/clients/sharex', { headers: { 'x-api-key': 'ihk_wrong' } })).status).toBe(401)
    const user = await userWithKey(t)
    const bad = await t.json('/api/v1/clients/sharex?visibility=secret', { headers: user.keyHeader })
    expect(bad.status).toBe(400)
    expect(typeof bad.body.error).toBe('string')
  })
})

/** Runs a script with sh; PATH is limited to `extraPath` plus the system directories (no clipboard tool there). */
async function runScript(script: string, args: string[], extraPath?: string, stdin?: Uint8Array) {
  const file = join(work, `script-${crypto.randomUUID()}.sh`)
  writeFileSync(file, script)
  const proc = Bun.spawn(['sh', file, ...args], {
    env: {
      PATH: [extraPath, '/usr/local/bin', '/usr/bin', '/bin'].filter(Boolean).join(':'),
      HOME: work,
      TMPDIR: work,
    },
    stdin: stdin ?? 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  return { stdout, stderr, code }
}

/** A directory holding fake commands (shell scripts). */
function fakeBin(commands: Record<string, string>) {
  const dir = mkdtempSync(join(work, 'bin-'))
  for (const [name, body] of Object.entries(commands)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`)
    chmodSync(join(dir, name), 0o755)
  }
  return dir
}

async function imageIdOf(link: string) {
  const match = /\/cdn\/([A-Za-z0-9]{8})\.(\w+)$/.exec(link.trim())
  expect(match).not.toBeNull()
  return match![1]
}

describe('GET /api/v1/clients/shell', () => {
  test('a shell script that uploads with curl and prints the direct link (no clipboard tool present)', async () => {
    const user = await userWithKey(t)
    const res = await t.fetch('/api/v1/clients/shell', { headers: user.keyHeader })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/x-shellscript')
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="[A-Za-z0-9._-]+\.sh"$/)
    const script = await res.text()
    expect(script.startsWith('#!/bin/sh\n')).toBe(true)
    expect(script).toContain(`'${user.apiKey}'`)

    const png = await makeImage('png', 33, 22)
    // ; and , would be curl -F syntax if the script did not quote the name.
    const file = join(work, 'my shot; v2, final.png')
    writeFileSync(file, png)
    const run = await runScript(script, [file])
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('no clipboard tool')
    const link = run.stdout.trim()
    expect(link).toMatch(new RegExp(`^${t.url}/cdn/[A-Za-z0-9]{8}\\.png$`))
    const direct = await fetch(link)
    expect(direct.status).toBe(200)
    expect(new Uint8Array(await direct.arrayBuffer())).toEqual(png)
    const listed = await t.json('/api/v1/images', { headers: user.keyHeader })
    expect(listed.body.images[0]).toMatchObject({ id: await imageIdOf(link), filename: 'my shot; v2, final.png' })
  })

  test('copies the link with the first clipboard tool that works; reads standard input with -', async () => {
    const user = await userWithKey(t)
    const script = await (await t.fetch('/api/v1/clients/shell', { headers: user.keyHeader })).text()
    const clip = join(work, `clipboard-${crypto.randomUUID()}`)
    // wl-copy exists but fails (no Wayland session): xclip is next.
    const bin = fakeBin({
      'wl-copy': 'exit 1',
      xclip: `[ "$1" = "-selection" ] && [ "$2" = "clipboard" ] || exit 3\ncat > '${clip}'`,
    })
    const run = await runScript(script, ['-'], bin, await makeImage('png', 12, 12))
    expect(run.code).toBe(0)
    expect(run.stderr).toBe('')
    const link = run.stdout.trim()
    expect(readFileSync(clip, 'utf8')).toBe(link)
    expect((await fetch(link)).status).toBe(200)
  })

  test('options are quoted: an album name with shell syntax is sent as is and never run', async () => {
    const user = await userWithKey(t)
    // The scripts run with HOME set to the work directory (see runScript).
    const marker = join(work, 'pwned')
    const album = `it's $(touch $HOME/pwned) \`touch ~/pwned\` @/etc/passwd`
    const res = await t.fetch(`/api/v1/clients/shell?visibility=private&album=${encodeURIComponent(album)}`, {
      headers: user.keyHeader,
    })
    expect(res.status).toBe(200)
    const file = join(work, 'a.png')
    writeFileSync(file, await makeImage('png', 10, 10))
    const run = await runScript(await res.text(), [file])
    expect(run.code).toBe(0)
    expect(existsSync(marker)).toBe(false)
    const id = await imageIdOf(run.stdout)
    expect((await t.json(`/api/v1/image/${id}`)).body.data.visibility).toBe('private')
    const albums = (await t.json('/api/albums', { headers: user.bearer })).body.albums
    expect(albums.map((a: { title: string }) => a.title)).toEqual([album])
  })

  test('an upload the server refuses: exit 1 with its error message, nothing printed on stdout', async () => {
    const user = await userWithKey(t)
    const script = await (await t.fetch('/api/v1/clients/shell', { headers: user.keyHeader })).text()
    const file = join(work, 'notes.txt')
    writeFileSync(file, 'hello')
    const run = await runScript(script, [file])
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('upload failed:')
    expect(run.stderr.length).toBeGreaterThan('upload failed: \n'.length)
  })
})

describe('GET /api/v1/clients/flameshot', () => {
  test('captures with `flameshot gui --raw`, uploads, copies and prints the link', async () => {
    const user = await userWithKey(t)
    const res = await t.fetch('/api/v1/clients/flameshot', { headers: user.keyHeader })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/x-shellscript')
    const script = await res.text()
    expect(script).toContain('flameshot gui --raw')
    const png = await makeImage('png', 50, 40)
    const capture = join(work, 'capture.png')
    writeFileSync(capture, png)
    const clip = join(work, `clipboard-${crypto.randomUUID()}`)
    const bin = fakeBin({ flameshot: `[ "$1 $2" = "gui --raw" ] || exit 3\ncat '${capture}'`, xsel: `cat > '${clip}'` })
    const run = await runScript(script, [], bin)
    expect(run.code).toBe(0)
    const link = run.stdout.trim()
    expect(readFileSync(clip, 'utf8')).toBe(link)
    expect(new Uint8Array(await (await fetch(link)).arrayBuffer())).toEqual(png)
    const listed = await t.json('/api/v1/images', { headers: user.keyHeader })
    expect(listed.body.images[0].filename).toMatch(/^screenshot-\d{8}-\d{6}\.png$/)
  })

  test('a cancelled capture (no output) uploads nothing and exits 0', async () => {
    const user = await userWithKey(t)
    const script = await (await t.fetch('/api/v1/clients/flameshot', { headers: user.keyHeader })).text()
    const run = await runScript(script, [], fakeBin({ flameshot: 'exit 0' }))
    expect(run.code).toBe(0)
    expect(run.stdout).toBe('')
    expect((await t.json('/api/v1/images', { headers: user.keyHeader })).body.total).toBe(0)
  })

  test('needs an API key', async () => {
    expect((await t.json('/api/v1/clients/flameshot')).status).toBe(401)
    expect((await t.json('/api/v1/clients/shell')).status).toBe(401)
  })
})
