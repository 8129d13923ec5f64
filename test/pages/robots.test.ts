import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../../src/config'
import { ROBOTS_TXT_MAX_BYTES, robotsTxtFrom } from '../../src/modules/pages/robots'
import { startTestServer, type TestServer } from '../helpers'

/** RFC 9309 for the `*` group: the longest matching rule wins, Allow on a tie; no rule: allowed. */
function allowed(robots: string, path: string): boolean {
  let best = { length: -1, allow: true }
  for (const line of robots.split('\n')) {
    const rule = line.match(/^(allow|disallow):\s*(\S*)/i)
    if (!rule?.[2] || !path.startsWith(rule[2])) continue
    const allow = rule[1].toLowerCase() === 'allow'
    if (rule[2].length > best.length || (rule[2].length === best.length && allow))
      best = { length: rule[2].length, allow }
  }
  return best.allow
}

const scratch = mkdtempSync(join(tmpdir(), 'imghost-robots-'))
let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(async () => {
  await t.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe('/robots.txt', () => {
  test('by default, the gallery, profiles and image pages are open; the dashboard, API and admin pages are not', async () => {
    const res = await t.fetch('/robots.txt')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    const robots = await res.text()
    expect(robots).toStartWith('User-agent: *\n')
    for (const path of ['/gallery', '/gallery?page=2', '/u/alice', '/i/AbCdEfGh', '/'])
      expect({ path, allowed: allowed(robots, path) }).toEqual({ path, allowed: true })
    for (const path of ['/dashboard', '/api/v1/images', '/api/oembed?url=x', '/api/admin/users', '/admin/reports'])
      expect({ path, allowed: allowed(robots, path) }).toEqual({ path, allowed: false })
  })

  test('ROBOTS_TXT serves the text of its file instead, read once at startup', async () => {
    const file = join(scratch, 'robots.txt')
    const text = 'User-agent: *\nDisallow: /\n'
    writeFileSync(file, text)
    const custom = await startTestServer({ ROBOTS_TXT: file })
    try {
      // Changing the file later does not change the answer: it was read once.
      writeFileSync(file, 'User-agent: *\nAllow: /\n')
      const res = await custom.fetch('/robots.txt')
      expect(res.status).toBe(200)
      expect(await res.text()).toBe(text)
    } finally {
      await custom.stop()
    }
  })

  test('a missing or too large ROBOTS_TXT file stops the start with a ConfigError naming it', () => {
    const large = join(scratch, 'large.txt')
    writeFileSync(large, `User-agent: *\n${'#'.repeat(ROBOTS_TXT_MAX_BYTES)}\n`)
    const fits = join(scratch, 'fits.txt')
    writeFileSync(fits, 'x'.repeat(ROBOTS_TXT_MAX_BYTES))
    expect(robotsTxtFrom(fits)).toHaveLength(ROBOTS_TXT_MAX_BYTES)
    for (const file of [large, join(scratch, 'missing.txt')]) {
      let error: unknown
      try {
        robotsTxtFrom(file)
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(ConfigError)
      expect((error as Error).message).toContain(`Invalid ROBOTS_TXT file ${file}`)
    }
  })
})
