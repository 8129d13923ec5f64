import { describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config'

const MB = 1024 * 1024
const GB = 1024 * MB
const ROOT = resolve(import.meta.dir, '../..')

function configError(env: Record<string, string>): Error {
  try {
    loadConfig(env)
  } catch (error) {
    return error as Error
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`)
}

describe('loadConfig defaults', () => {
  const config = loadConfig({})

  test('port and links', () => {
    expect(config.http.port).toBe(3000)
    expect(config.site.publicUrl).toBe('http://localhost:3000')
    expect(config.site.cdnUrl).toBe('http://localhost:3000')
    expect(config.site.name).toBe('imghost')
    expect(config.site.color).toBe('#3b82f6')
    expect(config.http.trustProxy).toBe(false)
    expect(config.media.stripMetadata).toBe('gps')
    expect(config.auth.jwtSecret).toBe('')
    expect(config.smtp.url).toBe('')
    expect(config.paths.dataDir).toBe(resolve('data'))
  })

  test('every top-level key is a slice', () => {
    for (const [key, slice] of Object.entries(config)) {
      expect([key, typeof slice, slice === null]).toEqual([key, 'object', false])
    }
  })

  test('paths under DATA_DIR are resolved once; TUS_DIR moves the tus directory only', () => {
    const dataDir = resolve('data')
    expect(config.paths).toEqual({
      dataDir,
      tmpDir: join(dataDir, 'tmp'),
      tusDir: join(dataDir, 'tus'),
      filesDir: join(dataDir, 'files'),
      sqliteFile: join(dataDir, 'imghost.sqlite'),
    })
    const moved = loadConfig({ DATA_DIR: '/srv/img/', TUS_DIR: 'shared/tus' }).paths
    expect(moved.dataDir).toBe('/srv/img')
    expect(moved.tmpDir).toBe('/srv/img/tmp')
    expect(moved.tusDir).toBe(resolve('shared/tus'))
  })

  test('limits are the INTERFACE.md ones, in binary bytes', () => {
    expect(config.limits.user).toEqual({ maxFiles: 15, maxFileSize: 50 * MB })
    expect(config.limits.user.maxFileSize).toBe(52428800)
    expect(config.limits.admin.maxFiles).toBe(100)
    expect(config.limits.storage).toEqual({ unverified: 500 * MB, verified: 10 * GB })
    expect(config.limits.storage.verified).toBe(10737418240)
    expect(config.limits.uploadsPerHour).toBe(100)
    expect(config.limits.anonymous).toEqual({ maxFiles: 5, maxFileSize: 25 * MB, uploads: 10, windowSeconds: 600 })
    expect(config.limits.globalPerMinute).toBe(500)
    expect(config.limits.maxPixels).toBe(100_000_000)
    expect(config.nsfw.thresholds).toEqual({ pornHentai: 0.5, sexy: 0.8 })
    expect(config.nsfw.backend).toBe('auto')
    expect(config.nsfw.idleUnloadMs).toBe(300_000)
  })

  test('PUBLIC_URL follows PORT when unset; a given one loses its trailing slash', () => {
    expect(loadConfig({ PORT: '8080' }).site.publicUrl).toBe('http://localhost:8080')
    expect(loadConfig({ PORT: '' }).site.publicUrl).toBe('http://localhost:3000')
    const custom = loadConfig({ PUBLIC_URL: 'https://img.example.com/' })
    expect(custom.site.publicUrl).toBe('https://img.example.com')
    expect(custom.site.cdnUrl).toBe('https://img.example.com')
    expect(loadConfig({ PUBLIC_URL: 'https://img.example.com', CDN_URL: 'https://cdn.example.com/' }).site.cdnUrl).toBe(
      'https://cdn.example.com',
    )
  })

  test('given values are parsed to their types', () => {
    const c = loadConfig({
      PORT: '4000',
      MAX_FILE_SIZE: '1024',
      TRUST_PROXY: 'true',
      STRIP_METADATA: 'all',
      SITE_COLOR: '#ABCDEF',
      NSFW_SEXY_THRESHOLD: '0.9',
    })
    expect(c.http.port).toBe(4000)
    expect(c.limits.user.maxFileSize).toBe(1024)
    expect(c.http.trustProxy).toBe(true)
    expect(loadConfig({ TRUST_PROXY: '1' }).http.trustProxy).toBe(true)
    expect(loadConfig({ TRUST_PROXY: '0' }).http.trustProxy).toBe(false)
    expect(c.media.stripMetadata).toBe('all')
    expect(c.site.color).toBe('#ABCDEF')
    expect(c.nsfw.thresholds.sexy).toBe(0.9)
    expect(loadConfig({ NSFW_BACKEND: 'wasm' }).nsfw.backend).toBe('wasm')
    expect(loadConfig({ NSFW_IDLE_UNLOAD_SECONDS: '45' }).nsfw.idleUnloadMs).toBe(45_000)
    expect(loadConfig({ NSFW_IDLE_UNLOAD_SECONDS: '0' }).nsfw.idleUnloadMs).toBe(0)
  })
})

describe('invalid values', () => {
  const cases: Record<string, string>[] = [
    { PORT: 'abc' },
    { PORT: '70000' },
    { PORT: '-1' },
    { PORT: '80.5' },
    { STRIP_METADATA: 'foo' },
    { SITE_COLOR: 'red' },
    { SITE_COLOR: '#12345' },
    { TRUST_PROXY: 'maybe' },
    { MAX_FILE_SIZE: 'ten' },
    { MAX_FILE_SIZE: '0' },
    { UPLOADS_PER_HOUR: '1.5' },
    { PUBLIC_URL: 'ftp://example.com' },
    { PUBLIC_URL: 'example.com' },
    { NSFW_PORN_HENTAI_THRESHOLD: '2' },
    { NSFW_BACKEND: 'tfjs-node' },
    { NSFW_IDLE_UNLOAD_SECONDS: '-1' },
    { NSFW_IDLE_UNLOAD_SECONDS: '1.5' },
    { NSFW_IDLE_UNLOAD_SECONDS: 'soon' },
    { SMTP_URL: 'http://mail.example.com' },
    { DATABASE_URL: 'mysql://db.example.com/imghost' },
  ]
  for (const env of cases) {
    const [name, value] = Object.entries(env)[0]
    test(`${name}=${value} throws an error naming ${name}`, () => {
      const error = configError(env)
      expect(error).toBeInstanceOf(ConfigError)
      expect(error.message).toContain(name)
    })
  }

  test('DATABASE_URL needs the keys every instance shares: JWT_SECRET, VARIANT_SECRET and TOTP_KEY', () => {
    const keys = { JWT_SECRET: 'j'.repeat(32), VARIANT_SECRET: 'v'.repeat(32), TOTP_KEY: 't'.repeat(32) }
    const url = 'postgres://imghost:secret@db.example.com:5432/imghost'
    expect(loadConfig({ DATABASE_URL: url, ...keys }).database.url).toBe(url)
    for (const name of Object.keys(keys)) {
      const error = configError({ DATABASE_URL: url, ...keys, [name]: '' })
      expect(error).toBeInstanceOf(ConfigError)
      expect(error.message).toBe(`Missing value for ${name}: required with DATABASE_URL`)
    }
    // Without DATABASE_URL they are generated into DATA_DIR as before.
    expect(loadConfig({}).database.url).toBe('')
  })

  test('the error names the bad variable, not a good one next to it', () => {
    const error = configError({ PORT: '3000', SITE_COLOR: 'red', STRIP_METADATA: 'gps' })
    expect(error.message).toContain('SITE_COLOR')
    expect(error.message).not.toContain('PORT')
    expect(error.message).not.toContain('STRIP_METADATA')
  })
})

describe('immutability', () => {
  test('the returned object is frozen, nested settings included', () => {
    const config = loadConfig({})
    expect(Object.isFrozen(config)).toBe(true)
    expect(() => {
      ;(config as any).http = {}
    }).toThrow()
    expect(() => {
      ;(config.http as any).port = 1
    }).toThrow()
    expect(config.http.port).toBe(3000)
    for (const nested of [
      config.site,
      config.http,
      config.paths,
      config.database,
      config.auth,
      config.limits,
      config.limits.user,
      config.limits.anonymous,
      config.limits.storage,
      config.nsfw,
      config.nsfw.thresholds,
      config.auth.admin,
      config.smtp,
    ]) {
      expect(Object.isFrozen(nested)).toBe(true)
    }
    expect(() => {
      ;(config.limits.user as any).maxFileSize = 1
    }).toThrow()
    expect(config.limits.user.maxFileSize).toBe(50 * MB)
  })
})

describe('the real process', () => {
  test('an invalid variable stops startup with a non-zero exit and names the variable', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'imghost-config-'))
    try {
      const proc = Bun.spawn([join(ROOT, 'node_modules/.bin/bun'), 'src/index.ts'], {
        cwd: ROOT,
        env: {
          ...process.env,
          PORT: 'abc',
          DATA_DIR: dataDir,
          JWT_SECRET: '',
          ADMIN_USERNAME: '',
          LOG_REQUESTS: 'false',
        },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const killer = setTimeout(() => proc.kill(), 30_000)
      const [code, out, err] = await Promise.all([
        proc.exited,
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
      ])
      clearTimeout(killer)
      expect(proc.signalCode).toBeNull()
      expect(code).not.toBe(0)
      expect(out + err).toContain('PORT')
      // It stopped before touching the data directory.
      expect(readdirSync(dataDir)).toEqual([])
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
