/**
 * What a crash leaves (issue 36, point 9): uploads killed with kill -9 after their files are stored and before their
 * row is written leave files no row owns. Their intents (src/modules/images/upload/intents.ts) make the next start
 * remove them at once, so the real `cli check` is clean after the restart, not a day later. The process stops at the
 * test-only fault point (IMGHOST_FAULT_POINT=upload-stored in src/faults.ts) and is killed there.
 */
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Bytes, makeImage, uploadForm } from '../../fixtures'
import { runCli } from '../../helpers'
import { queryEnv } from '../../other-connection'
import { apiKey, eventually, serverEnv, spawnServer, within } from '../../spawn-server'

const TIMEOUT = 120_000
const UPLOADS = 3

const upload = (base: string, key: string, bytes: Bytes) =>
  fetch(`${base}/api/v1/upload`, { method: 'POST', headers: { 'x-api-key': key }, body: uploadForm([{ bytes }]) })

const intentRows = async (env: Record<string, string>) =>
  Number((await queryEnv<{ n: unknown }>(env, 'SELECT count(*) AS n FROM upload_intents'))[0]?.n)

/**
 * A server on `env` that takes `count` uploads, each stopped at the fault point (its original and thumbnail stored, no
 * row written), then is killed with kill -9: returns the uploads' answers (none) and the account's key.
 */
async function crashMidUploads(env: Record<string, string>, count: number) {
  const first = await spawnServer({ ...env, IMGHOST_FAULT_POINT: 'upload-stored' })
  const key = await apiKey(first)
  const images = await Promise.all(Array.from({ length: count }, (_, i) => makeImage('png', 40 + i, 30 + i)))
  const answers = images.map((bytes) => upload(first.base, key, bytes).catch(() => null))
  const stopped = () =>
    first
      .output()
      .split('\n')
      .filter((line) => line.includes('fault point reached')).length
  expect(await eventually(60_000, () => stopped() === count)).toBe(true)
  first.proc.kill('SIGKILL')
  await within(20_000, 'the killed process', first.proc.exited)
  return { answers: await Promise.all(answers), key, images }
}

/** A server started again on `env` after a crash: once it says its start swept crashed uploads, and how many. */
async function restart(env: Record<string, string>) {
  const second = await spawnServer(env)
  const said = () =>
    second
      .output()
      .split('\n')
      .find((line) => line.includes('"msg":"crashed uploads swept"'))
  expect(await eventually(30_000, () => said() !== undefined)).toBe(true)
  return { second, removed: JSON.parse(said()!).removed as number }
}

test(
  'kill -9 between the files and the row: cli check finds them, a restart removes them, cli check exits 0',
  async () => {
    const env = await serverEnv()
    const { answers, key, images } = await crashMidUploads(env, UPLOADS)
    expect(answers).toEqual(images.map(() => null))

    // What the crash left, as the operator's check sees it: two files per upload, no row.
    const left = await runCli(['check'], env)
    expect(left.code).toBe(2)
    const report = JSON.parse(left.out) as { strayFiles: string[] }
    expect(report.strayFiles).toHaveLength(UPLOADS * 2)
    expect(await intentRows(env)).toBe(UPLOADS)

    // The restart removes them at once (not after the orphan sweep's 24 hours), and says so.
    const { second, removed } = await restart(env)
    expect(removed).toBe(UPLOADS)
    // An upload of this life keeps its files: its intent went with its row.
    const kept = await upload(second.base, key, images[0]!)
    expect(kept.status).toBe(201)
    second.proc.kill('SIGTERM')
    expect(await within(20_000, 'the process to exit', second.proc.exited)).toBe(0)

    const clean = await runCli(['check'], env)
    expect(clean.err).toBe('')
    expect(clean.code).toBe(0)
    expect(await intentRows(env)).toBe(0)
  },
  TIMEOUT,
)

test(
  "a server's start leaves an import in progress alone: only its own crashed uploads are swept",
  async () => {
    const env = await serverEnv()
    // A crash of the server's own, so that its restart says when its sweep has run.
    await crashMidUploads(env, 1)

    // `cli import` beside the server's data directory, stopped with one image's files stored and no row.
    expect((await runCli(['create-user', 'importer', 'importer@example.com', 'correct horse battery'], env)).code).toBe(
      0,
    )
    const folder = mkdtempSync(join(tmpdir(), 'imghost-import-'))
    writeFileSync(join(folder, 'one.png'), await makeImage('png', 50, 40))
    const root = join(import.meta.dir, '../../..')
    const importing = Bun.spawn([process.execPath, join(root, 'src/cli.ts'), 'import', folder, '--user', 'importer'], {
      env: { ...env, IMGHOST_FAULT_POINT: 'upload-stored' },
      cwd: root,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    let said = ''
    const drain = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) said += new TextDecoder().decode(chunk)
    }
    void drain(importing.stdout)
    void drain(importing.stderr)
    try {
      expect(await eventually(60_000, () => said.includes('fault point reached'))).toBe(true)
      expect(await intentRows(env)).toBe(2)

      const { second, removed } = await restart(env)
      // The server's own crashed upload went; the import's intent and its two files stay.
      expect(removed).toBe(1)
      expect(await intentRows(env)).toBe(1)
      second.proc.kill('SIGTERM')
      await within(20_000, 'the process to exit', second.proc.exited)
      const report = JSON.parse((await runCli(['check'], env)).out) as { strayFiles: string[] }
      expect(report.strayFiles).toHaveLength(2)
    } finally {
      importing.kill('SIGKILL')
      rmSync(folder, { recursive: true, force: true })
    }
  },
  TIMEOUT,
)
