import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../helpers'

// package.json's `version` is the one source: every place that says which version runs must say that one. (The
// single binary's `--version`: test/ops/binary.test.ts.)

const root = join(import.meta.dir, '..', '..')
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

function cli(args: string[], env: Record<string, string>) {
  const proc = Bun.spawnSync([process.execPath, join(root, 'src/cli.ts'), ...args], { cwd: root, env })
  return { code: proc.exitCode, out: proc.stdout.toString(), err: proc.stderr.toString() }
}

describe('version', () => {
  test('package.json has a semantic version', () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/)
  })

  test('/healthz answers it', async () => {
    const res = await t.json('/healthz')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: 'ok', version })
  })

  test("the OpenAPI document's info.version is it", async () => {
    const res = await t.json('/swagger/json')
    expect(res.status).toBe(200)
    expect(res.body.info.version).toBe(version)
  })

  test('`cli --version` and `cli version` print it, without reading the configuration', () => {
    // An invalid variable stops every other command (exit 1, naming it): the version is answered before.
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: join(t.dataDir, 'unused'), PORT: 'not-a-port' }
    expect(cli(['help'], env).code).toBe(0)
    expect(cli(['check'], env)).toMatchObject({ code: 1, err: expect.stringContaining('PORT') })
    for (const args of [['--version'], ['version']]) {
      const run = cli(args, env)
      expect(run, args[0]).toMatchObject({ code: 0, out: `${version}\n`, err: '' })
    }
  })

  test('CHANGELOG.md has a section for it', () => {
    const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8')
    expect(changelog).toContain(`\n## [${version}] - `)
  })
})
