/** JWT_SECRET, when set, is at least 32 bytes (issue 17): a shorter HS256 key can be brute-forced from any token. */
import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config'

describe('JWT_SECRET length', () => {
  test('under 32 bytes is a config error naming it; 32 bytes, or unset (generated), is accepted', () => {
    for (const secret of ['short', 'x'.repeat(31), `${'é'.repeat(15)}x`]) {
      expect(() => loadConfig({ JWT_SECRET: secret })).toThrow(ConfigError)
      expect(() => loadConfig({ JWT_SECRET: secret })).toThrow(/JWT_SECRET.*32 bytes/)
    }
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).auth.jwtSecret).toBe('x'.repeat(32))
    // Bytes, not characters: 16 two-byte characters are 32 bytes.
    expect(loadConfig({ JWT_SECRET: 'é'.repeat(16) }).auth.jwtSecret).toBe('é'.repeat(16))
    expect(loadConfig({}).auth.jwtSecret).toBe('')
  })

  test('the real process stops with exit 1 and the message', () => {
    const run = Bun.spawnSync([process.execPath, 'src/index.ts'], {
      cwd: `${import.meta.dir}/../..`,
      env: { ...process.env, JWT_SECRET: 'too-short', PORT: '0' },
      stderr: 'pipe',
    })
    expect(run.exitCode).toBe(1)
    expect(run.stderr.toString()).toContain('JWT_SECRET')
  })
})
