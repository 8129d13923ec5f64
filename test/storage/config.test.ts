import { describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config'

const ROOT = resolve(import.meta.dir, '../..')
const S3 = { STORAGE: 's3', S3_BUCKET: 'images', S3_ACCESS_KEY_ID: 'AKIA', S3_SECRET_ACCESS_KEY: 'secret' }

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as Error).message
  }
  throw new Error('expected a ConfigError')
}

describe('storage variables', () => {
  test('default: the local disk, streaming', () => {
    const config = loadConfig({})
    expect(config.storage.driver).toBe('local')
    expect(config.storage.s3).toMatchObject({
      endpoint: '',
      bucket: '',
      region: 'us-east-1',
      prefix: '',
      serve: 'stream',
    })
  })

  test('STORAGE=s3 with every S3 variable', () => {
    const config = loadConfig({
      ...S3,
      S3_ENDPOINT: 'https://acc.r2.cloudflarestorage.com',
      S3_REGION: 'auto',
      S3_PREFIX: 'imghost/prod',
      S3_SERVE: 'redirect',
    })
    expect(config.storage).toEqual({
      driver: 's3',
      s3: {
        endpoint: 'https://acc.r2.cloudflarestorage.com',
        bucket: 'images',
        region: 'auto',
        accessKeyId: 'AKIA',
        secretAccessKey: 'secret',
        prefix: 'imghost/prod/',
        serve: 'redirect',
      },
    })
    expect(Object.isFrozen(config.storage.s3)).toBe(true)
    expect(loadConfig({ ...S3, S3_PREFIX: 'a/' }).storage.s3.prefix).toBe('a/')
  })

  test('STORAGE=s3 without its bucket or credentials stops, naming the variable', () => {
    for (const name of ['S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY']) {
      expect(configError({ ...S3, [name]: '' })).toContain(name)
    }
    // Not needed (nor checked) while the storage is local.
    expect(loadConfig({ STORAGE: 'local' }).storage.driver).toBe('local')
  })

  test('bad values name their variable', () => {
    expect(configError({ STORAGE: 'disk' })).toContain('STORAGE')
    expect(configError({ ...S3, S3_SERVE: 'proxy' })).toContain('S3_SERVE')
    expect(configError({ ...S3, S3_ENDPOINT: 'ftp://files' })).toContain('S3_ENDPOINT')
    expect(configError({ ...S3, S3_PREFIX: '/absolute' })).toContain('S3_PREFIX')
    expect(configError({ ...S3, S3_PREFIX: 'a/../b' })).toContain('S3_PREFIX')
    expect(configError({ ...S3, S3_BUCKET: 'Not_A_Bucket' })).toContain('S3_BUCKET')
  })

  test('the real process: STORAGE=s3 without a bucket stops startup before touching the data directory', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-s3config-'))
    try {
      const env: Record<string, string | undefined> = {
        ...process.env,
        // The keys required beside DATABASE_URL on PostgreSQL runs, so the bucket is what stops it.
        JWT_SECRET: 'test-secret-'.padEnd(48, 'x'),
        VARIANT_SECRET: 'test-variant-secret'.padEnd(48, 'x'),
        TOTP_KEY: 'test-totp-key'.padEnd(48, 'x'),
        ...S3,
        S3_BUCKET: '',
        DATA_DIR: dataDir,
        PORT: '0',
        LOG_REQUESTS: 'false',
      }
      const proc = Bun.spawn([process.execPath, 'src/index.ts'], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' })
      const killer = setTimeout(() => proc.kill(), 30_000)
      const [code, out, err] = await Promise.all([
        proc.exited,
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
      ])
      clearTimeout(killer)
      expect(proc.signalCode).toBeNull()
      expect(code).not.toBe(0)
      expect(out + err).toContain('S3_BUCKET')
      expect(readdirSync(dataDir)).toEqual([])
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
