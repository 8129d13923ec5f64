/** `cli sign-variant` and the generated variant secret: kept in DATA_DIR (0600), shared by the CLI and the server. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { engine } from '../../src/db/engine'
import { makeImage } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'
import { pathOf, upload } from './support'

const root = join(import.meta.dir, '..', '..')
let t: TestServer
let id: string

beforeAll(async () => {
  t = await startTestServer()
  const owner = await userWithKey(t)
  id = (await upload(t, owner.keyHeader, await makeImage('jpeg', 400, 300), 'x.jpg')).id
})
afterAll(() => t.stop())

function cli(env: Record<string, string>, ...args: string[]) {
  const proc = Bun.spawnSync([process.execPath, join(root, 'src/cli.ts'), ...args], {
    env: { ...process.env, ...t.env, ...env },
    cwd: root,
  })
  return { code: proc.exitCode, out: proc.stdout.toString().trim(), err: proc.stderr.toString() }
}

describe('the variant secret', () => {
  // Generated on SQLite only: with DATABASE_URL, VARIANT_SECRET is required (config.ts) and the test run gives one.
  test.skipIf(engine === 'pg')('generated once into DATA_DIR/variant-secret, mode 0600', () => {
    const info = statSync(join(t.dataDir, 'variant-secret'))
    expect(info.mode & 0o777).toBe(0o600)
    expect(info.size).toBeGreaterThanOrEqual(32)
  })
})

describe('cli sign-variant', () => {
  test('signs with the server secret: the URL serves that size', async () => {
    const run = cli({}, 'sign-variant', id, '--width', '100', '--height', '100', '--fit', 'cover', '--format', 'jpg')
    expect(run.code).toBe(0)
    expect(run.out).toStartWith(`${t.url}/cdn/custom/${id}.jpg?w=100&h=100&fit=cover&s=`)
    expect((await t.fetch(pathOf(run.out))).status).toBe(200)
  })

  test('signed with another VARIANT_SECRET: 403 here', async () => {
    const run = cli({ VARIANT_SECRET: 'another-secret' }, 'sign-variant', id, '--width', '100', '--format', 'webp')
    expect(run.code).toBe(0)
    expect((await t.fetch(pathOf(run.out))).status).toBe(403)
  })

  test('out of bounds, a bad fit or format, or no id: a usage error (exit 2), nothing printed', () => {
    for (const args of [
      [id, '--width', '15', '--format', 'webp'],
      [id, '--width', '100', '--height', '5000', '--format', 'webp'],
      [id, '--width', '100', '--fit', 'stretch', '--format', 'webp'],
      [id, '--width', '100', '--format', 'gif'],
      ['--width', '100', '--format', 'webp'],
      [id, '--width', '100', '--format', 'webp', '--bogus', '1'],
    ]) {
      const run = cli({}, 'sign-variant', ...args)
      expect({ args, code: run.code, out: run.out }).toEqual({ args, code: 2, out: '' })
    }
  })
})
